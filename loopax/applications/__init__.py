"""`keras.applications`: every family Keras 3 ships (ResNet V1/V2, VGG, Xception,
Inception, DenseNet, MobileNet V1-V3, EfficientNet V1/V2, ConvNeXt, NASNet) with
`preprocess_input`/`decode_predictions` in their modules. Weights: "imagenet"
(Keras's published file, downloaded once into `$LOOPAX_HOME/models`), None, or a
local path. `decode_predictions` reads the ImageNet class index from a local file
(it downloads nothing)."""

from loopax.applications import (
    convnext,
    densenet,
    efficientnet,
    efficientnet_v2,
    imagenet_utils,
    inception_resnet_v2,
    inception_v3,
    mobilenet,
    mobilenet_v2,
    mobilenet_v3,
    nasnet,
    resnet,
    resnet50,
    resnet_v2,
    vgg16,
    vgg19,
    xception,
)
from loopax.src.applications.convnext import (
    ConvNeXtBase,
    ConvNeXtLarge,
    ConvNeXtSmall,
    ConvNeXtTiny,
    ConvNeXtXLarge,
)
from loopax.src.applications.densenet import DenseNet121, DenseNet169, DenseNet201
from loopax.src.applications.efficientnet import (
    EfficientNetB0,
    EfficientNetB1,
    EfficientNetB2,
    EfficientNetB3,
    EfficientNetB4,
    EfficientNetB5,
    EfficientNetB6,
    EfficientNetB7,
)
from loopax.src.applications.efficientnet_v2 import (
    EfficientNetV2B0,
    EfficientNetV2B1,
    EfficientNetV2B2,
    EfficientNetV2B3,
    EfficientNetV2L,
    EfficientNetV2M,
    EfficientNetV2S,
)
from loopax.src.applications.inception_resnet_v2 import InceptionResNetV2
from loopax.src.applications.inception_v3 import InceptionV3
from loopax.src.applications.mobilenet import MobileNet
from loopax.src.applications.mobilenet_v2 import MobileNetV2
from loopax.src.applications.mobilenet_v3 import MobileNetV3Large, MobileNetV3Small
from loopax.src.applications.nasnet import NASNetLarge, NASNetMobile
from loopax.src.applications.resnet import (
    ResNet50,
    ResNet50V2,
    ResNet101,
    ResNet101V2,
    ResNet152,
    ResNet152V2,
)
from loopax.src.applications.vgg16 import VGG16, VGG19
from loopax.src.applications.xception import Xception
