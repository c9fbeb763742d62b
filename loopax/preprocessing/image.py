"""`keras.preprocessing.image`."""

from loopax.src.utils.image_generator import ImageDataGenerator
from loopax.src.utils.image_utils import (
    array_to_img,
    img_to_array,
    load_img,
    save_img,
    smart_resize,
)

__all__ = ["ImageDataGenerator", "array_to_img", "img_to_array", "load_img", "save_img",
           "smart_resize"]
