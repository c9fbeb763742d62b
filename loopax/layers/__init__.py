"""Layers (Keras names): `loopax.layers.Dense`, `Conv2D`, `BatchNormalization`, ..."""

from loopax.src.layers.attention import MultiHeadAttention
from loopax.src.layers.aug_mix import AugMix
from loopax.src.layers.clahe import ContrastLimitedAdaptiveHistogramEqualization
from loopax.src.layers.convolutional import Conv1D, Conv2D, Conv3D
from loopax.src.layers.core import (
                                    Activation,
                                    ActivityRegularization,
                                    Dense,
                                    Dropout,
                                    Embedding,
                                    Flatten,
                                    Identity,
                                    Reshape,
)
from loopax.src.layers.input_layer import Input, InputLayer
from loopax.src.layers.jax_layer import FlaxLayer, JaxLayer
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.masking import Masking
from loopax.src.layers.max_num_bounding_boxes import MaxNumBoundingBoxes
from loopax.src.layers.merging import (
                                    Add,
                                    Average,
                                    Concatenate,
                                    Maximum,
                                    Minimum,
                                    Multiply,
                                    Subtract,
                                    add,
                                    average,
                                    concatenate,
                                    maximum,
                                    minimum,
                                    multiply,
                                    subtract,
)
from loopax.src.layers.normalization import BatchNormalization, LayerNormalization
from loopax.src.layers.pooling import (
                                    AveragePooling1D,
                                    AveragePooling2D,
                                    AvgPool1D,
                                    AvgPool2D,
                                    GlobalAveragePooling1D,
                                    GlobalAveragePooling2D,
                                    GlobalAvgPool1D,
                                    GlobalAvgPool2D,
                                    GlobalMaxPool1D,
                                    GlobalMaxPool2D,
                                    GlobalMaxPooling1D,
                                    GlobalMaxPooling2D,
                                    MaxPool1D,
                                    MaxPool2D,
                                    MaxPooling1D,
                                    MaxPooling2D,
)
from loopax.src.layers.random_elastic_transform import RandomElasticTransform
from loopax.src.layers.recurrent import (
                                    GRU,
                                    LSTM,
                                    RNN,
                                    Bidirectional,
                                    GRUCell,
                                    LSTMCell,
                                    SimpleRNN,
                                    SimpleRNNCell,
                                    StackedRNNCells,
                                    TimeDistributed,
)
from loopax.src.saving.layer_serialization import deserialize, serialize

# isort: split
# Layers added with the Keras parity suite (tests/keras_parity).
from loopax.src.layers.activation_layers import ELU, LeakyReLU, PReLU, ReLU, Softmax
from loopax.src.layers.adaptive_pooling import (
                                    AdaptiveAveragePooling1D,
                                    AdaptiveAveragePooling2D,
                                    AdaptiveAveragePooling3D,
                                    AdaptiveMaxPooling1D,
                                    AdaptiveMaxPooling2D,
                                    AdaptiveMaxPooling3D,
)
from loopax.src.layers.augmentation import (
                                    RandomBrightness,
                                    RandomContrast,
                                    RandomRotation,
                                    RandomTranslation,
                                    RandomZoom,
)
from loopax.src.layers.augmentation_policies import RandAugment
from loopax.src.layers.categorical import CategoryEncoding, Discretization
from loopax.src.layers.color_augmentation import (
                                    RandomColorDegeneration,
                                    RandomColorJitter,
                                    RandomGaussianBlur,
                                    RandomHue,
                                    RandomSaturation,
                                    RandomSharpness,
)
from loopax.src.layers.conv_lstm import ConvLSTM1D, ConvLSTM2D, ConvLSTM3D
from loopax.src.layers.convolutional import Convolution1D, Convolution2D, Convolution3D
from loopax.src.layers.convolutional_depthwise import (
                                    DepthwiseConv1D,
                                    DepthwiseConv2D,
                                    SeparableConv1D,
                                    SeparableConv2D,
                                    SeparableConvolution1D,
                                    SeparableConvolution2D,
)
from loopax.src.layers.convolutional_transpose import (
                                    Conv1DTranspose,
                                    Conv2DTranspose,
                                    Conv3DTranspose,
                                    Convolution1DTranspose,
                                    Convolution2DTranspose,
                                    Convolution3DTranspose,
)
from loopax.src.layers.dot import Dot, dot
from loopax.src.layers.dot_attention import AdditiveAttention, Attention
from loopax.src.layers.einsum_dense import EinsumDense
from loopax.src.layers.geometric_augmentation import RandomPerspective, RandomShear
from loopax.src.layers.grouped_query_attention import (
                                    GroupedQueryAttention as GroupQueryAttention,
)
from loopax.src.layers.hashed_crossing import HashedCrossing
from loopax.src.layers.hashing import Hashing
from loopax.src.layers.image_augmentation import (
                                    AutoContrast,
                                    CutMix,
                                    Equalization,
                                    MixUp,
                                    RandomErasing,
                                    RandomGrayscale,
                                    RandomInvert,
                                    RandomPosterization,
                                    Solarization,
)
from loopax.src.layers.lambda_layer import Lambda
from loopax.src.layers.lookup import IntegerLookup, StringLookup
from loopax.src.layers.noise import (
                                    AlphaDropout,
                                    GaussianDropout,
                                    GaussianNoise,
                                    SpatialDropout1D,
                                    SpatialDropout2D,
                                    SpatialDropout3D,
)
from loopax.src.layers.normalization import (
                                    GroupNormalization,
                                    RMSNormalization,
                                    UnitNormalization,
)
from loopax.src.layers.pipeline import Pipeline
from loopax.src.layers.pooling import (
                                    AveragePooling3D,
                                    AvgPool3D,
                                    GlobalAveragePooling3D,
                                    GlobalAvgPool3D,
                                    GlobalMaxPool3D,
                                    GlobalMaxPooling3D,
                                    MaxPool3D,
                                    MaxPooling3D,
)
from loopax.src.layers.preprocessing import (
                                    CenterCrop,
                                    Normalization,
                                    RandomCrop,
                                    RandomFlip,
                                    Rescaling,
                                    Resizing,
)
from loopax.src.layers.reshaping import (
                                    Cropping1D,
                                    Cropping2D,
                                    Cropping3D,
                                    Permute,
                                    RepeatVector,
                                    UpSampling1D,
                                    UpSampling2D,
                                    UpSampling3D,
                                    ZeroPadding1D,
                                    ZeroPadding2D,
                                    ZeroPadding3D,
)
from loopax.src.layers.reversible_embedding import ReversibleEmbedding
from loopax.src.layers.spectral_normalization import SpectralNormalization
from loopax.src.layers.spectrogram import MelSpectrogram, STFTSpectrogram
from loopax.src.layers.text_vectorization import TextVectorization
from loopax.src.layers.wrapper import Wrapper
