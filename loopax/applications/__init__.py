"""`keras.applications`: ResNet50, VGG16, MobileNetV2, EfficientNetB0 with
`preprocess_input`/`decode_predictions` in their modules. Weights: None, or
the local path of Keras's weight file (loopax downloads nothing)."""

from loopax.applications import efficientnet, imagenet_utils, mobilenet_v2, resnet50, vgg16
from loopax.src.applications.efficientnet import EfficientNetB0
from loopax.src.applications.mobilenet_v2 import MobileNetV2
from loopax.src.applications.resnet import ResNet50
from loopax.src.applications.vgg16 import VGG16
