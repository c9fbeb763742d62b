"""`EinsumDense`: a dense layer whose product is an einsum equation.

`EinsumDense("abc,cd->abd", output_shape=(None, 64), bias_axes="d")` maps
`(batch, T, C)` to `(batch, T, 64)` with a `(C, 64)` kernel. The kernel's
shape is read off the equation: each kernel letter takes its size from
`output_shape` when it names an output axis, else from the input.
`output_shape` lists the output axes after the batch axis (for `"...x,xy->...y"`
equations: the axes after the ellipsis).
"""

from __future__ import annotations

import re

import jax.numpy as jnp

from loopax.src import activations, constraints, initializers, quantizers, regularizers
from loopax.src.api_export import export
from loopax.src.layers import quantization
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.quantizers import quantization_config
from loopax.src.tensor import unwrap

_FORMS = (  # (pattern, where the ellipsis stands)
    (re.compile(r"([a-zA-Z]+),([a-zA-Z]+)->([a-zA-Z]+)"), None),
    (re.compile(r"\.\.\.([a-zA-Z]+),([a-zA-Z]+)->\.\.\.([a-zA-Z]+)"), "left"),
    (re.compile(r"([a-zA-Z]{2,})\.\.\.,([a-zA-Z]+)->([a-zA-Z]+)\.\.\."), "right"),
)


def parse_equation(equation, bias_axes=None):
    """`(input letters, kernel letters, output letters, ellipsis)`, ellipsis
    None, "left" or "right"; ValueError for an equation EinsumDense cannot
    take."""
    match = None
    for pattern, ellipsis in _FORMS:
        match = pattern.fullmatch(equation) if isinstance(equation, str) else None
        if match:
            break
    if not match:
        raise ValueError(
            f"EinsumDense: `equation` must have the form 'ab,bc->ac', '...b,bc->...c' or "
            f"'ab...,bc->ac...' (input,kernel->output, letters only); got {equation!r}.")
    inputs, kernel, outputs = match.groups()
    for letter in outputs:
        if letter not in inputs + kernel:
            raise ValueError(f"EinsumDense: output axis {letter!r} of equation {equation!r} "
                             "is in neither the input nor the kernel.")
    for letter in kernel:
        if letter not in inputs + outputs:
            raise ValueError(f"EinsumDense: kernel axis {letter!r} of equation {equation!r} "
                             "is in neither the input nor the output, so its size is unknown.")
    for letter in bias_axes or "":
        if letter not in outputs:
            raise ValueError(f"EinsumDense: bias axis {letter!r} (bias_axes={bias_axes!r}) is "
                             f"not an output axis of equation {equation!r}.")
    return inputs, kernel, outputs, ellipsis


@export("loopax.layers.EinsumDense")
class EinsumDense(Layer):
    """`activation(einsum(equation, inputs, kernel) + bias)`.

    The equation has one of the forms `"ab,bc->ac"`, `"...b,bc->...c"` (any
    leading axes) or `"ab...,bc->ac..."` (any trailing axes). Without an
    ellipsis the input's rank is the input letters'; the output's first
    axis is the batch axis.

    Args:
        equation: The einsum equation `"input,kernel->output"`.
        output_shape: Sizes of the output axes after the batch axis (or after
            the ellipsis), an int for one axis; None entries take the input's size.
        activation: An activation name or callable; None (the default) is linear.
        bias_axes: The output letters the bias spans (e.g. `"d"` or `"de"`); None (the
            default) adds no bias. The bias is shaped to broadcast from the first of them.
        kernel_initializer: Initializer of `kernel` (default `"glorot_uniform"`, with its
            fans counted over the kernel's input and output axes, as Keras).
        bias_initializer: Initializer of `bias` (default `"zeros"`).
        kernel_regularizer: Regularizer of `kernel`, or None.
        bias_regularizer: Regularizer of `bias`, or None.
        kernel_constraint: Constraint applied to `kernel` after each update, or None.
        bias_constraint: Constraint applied to `bias` after each update, or None.
        quantization_config: The `loopax.quantizers.QuantizationConfig` a quantized
            layer was quantized with (configs of saved quantized layers carry it).
        gptq_unpacked_column_size: Set by GPTQ quantization (the columns of the
            kernel's 2-D form; Keras's config entry), else None.
        awq_unpacked_column_size: The same, set by AWQ quantization.
        **kwargs: Base layer arguments (`name`, `dtype`, `activity_regularizer`, ...).

    Raises:
        ValueError: an equation not of those forms, a kernel or output letter found
            nowhere else, a bias letter that is not an output letter, or (when built)
            `output_shape` or the input's shape not fitting the equation.
    """

    row_wise = True

    def __init__(self, equation: str, output_shape: int | tuple, activation=None,
                 bias_axes: str | None = None, kernel_initializer="glorot_uniform",
                 bias_initializer="zeros", kernel_regularizer=None, bias_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, quantization_config=None,
                 gptq_unpacked_column_size=None, awq_unpacked_column_size=None, **kwargs):
        super().__init__(**kwargs)
        self.gptq_unpacked_column_size = gptq_unpacked_column_size
        self.awq_unpacked_column_size = awq_unpacked_column_size
        self.quantization_config = quantizers.get(quantization_config)
        self._spec = parse_equation(equation, bias_axes)
        self.equation, self.bias_axes = equation, bias_axes
        self.partial_output_shape = ((output_shape,) if isinstance(output_shape, int)
                                     else tuple(output_shape))
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel_regularizer = regularizers.get(kernel_regularizer)
        self.bias_regularizer = regularizers.get(bias_regularizer)
        self.kernel_constraint = constraints.get(kernel_constraint)
        self.bias_constraint = constraints.get(bias_constraint)

    def _axis_sizes(self, input_shape):
        """`({input letter: size}, {output letter: size})` for this input shape."""
        inputs, _, outputs, ellipsis = self._spec
        rank, n = len(input_shape), len(inputs)
        if rank < n or (ellipsis is None and rank != n):
            raise ValueError(
                f"EinsumDense {self.name!r}: equation {self.equation!r} needs an input of rank "
                f"{'>= ' if ellipsis else ''}{n}; got shape {tuple(input_shape)}.")
        named = outputs if ellipsis == "left" else outputs[1:]
        if len(self.partial_output_shape) != len(named):
            raise ValueError(
                f"EinsumDense {self.name!r}: output_shape {self.partial_output_shape} must give "
                f"one size (or None) per output axis {named!r} of equation {self.equation!r}.")
        input_sizes = dict(zip(inputs, input_shape[rank - n:] if ellipsis == "left"
                               else input_shape[:n]))
        output_sizes = dict(zip(named, self.partial_output_shape))
        if ellipsis != "left":
            output_sizes[outputs[0]] = input_shape[0]     # the batch axis
        for letter in set(inputs) & set(outputs):
            given, found = output_sizes[letter], input_sizes[letter]
            if given is not None and found is not None and given != found:
                raise ValueError(
                    f"EinsumDense {self.name!r}: axis {letter!r} has size {found} in the input "
                    f"{tuple(input_shape)} but {given} in output_shape "
                    f"{self.partial_output_shape}; they must agree (or give None).")
        return input_sizes, output_sizes

    def build(self, input_shape):
        inputs, kernel, outputs, ellipsis = self._spec
        input_sizes, output_sizes = self._axis_sizes(tuple(input_shape))

        def size(letter, what):
            found = output_sizes.get(letter)
            found = input_sizes.get(letter) if found is None else found
            if found is None:
                raise ValueError(
                    f"EinsumDense {self.name!r}: the size of {what} axis {letter!r} is unknown "
                    f"(input shape {tuple(input_shape)}, output_shape "
                    f"{self.partial_output_shape}); give it in output_shape.")
            return int(found)

        kernel_shape = tuple(size(letter, "kernel") for letter in kernel)
        initializer = self.kernel_initializer
        if isinstance(initializer, initializers.VarianceScaling) and (
                initializer.input_axes is None or initializer.output_axes is None):
            # As Keras: fans over the kernel's contracted and output axes.
            initializer = type(initializer).from_config({
                **initializer.get_config(), "seed": initializer.seed,
                "input_axes": [i for i, c in enumerate(kernel) if c not in outputs],
                "output_axes": [i for i, c in enumerate(kernel) if c in outputs]})
        if self.quantization_mode == "int8":
            self._build_int8_kernel(kernel_shape)
        elif self.quantization_mode in quantization.CALIBRATED_MODES:   # from a saved config
            self._build_calibrated_kernel(self.quantization_mode, kernel_shape,
                                          self.quantization_config)
            self.kernel = self.quantized_kernel       # its grid values load next
            setattr(self, f"is_{self.quantization_mode}_calibrated", True)
        else:
            self.kernel = self.add_weight(kernel_shape, initializer, name="kernel",
                                          regularizer=self.kernel_regularizer,
                                          constraint=self.kernel_constraint)
        self.bias = None
        if self.bias_axes:
            first = min(outputs.index(letter) for letter in self.bias_axes)
            bias_shape = [size(c, "bias") if c in self.bias_axes else 1 for c in outputs[first:]]
            if ellipsis == "right":
                bias_shape += [1] * (len(input_shape) - len(inputs))
            self.bias = self.add_weight(tuple(bias_shape), self.bias_initializer, name="bias",
                                        regularizer=self.bias_regularizer,
                                        constraint=self.bias_constraint)
        if self.quantization_mode == "float8":
            quantization.float8_weights(self)
        elif self.quantization_mode == "int8":
            quantization.order_weights(self, ("kernel", "bias", "kernel_scale"))
        elif self.quantization_mode in quantization.CALIBRATED_MODES:
            quantization.order_weights(self, self._CALIBRATED_ORDER)
        offset = len(input_shape) - len(inputs) if ellipsis == "left" else 0
        self.input_spec = InputSpec(ndim=len(input_shape), axes={
            offset + i: input_sizes[c] for i, c in enumerate(inputs) if c in kernel})
        self.built = True

    def call(self, inputs, training=None):
        x = unwrap(inputs)
        mode = self.quantization_mode
        if mode == "int8":
            y = self._int8_einsum(x)
        elif mode in quantization.CALIBRATED_MODES:
            y = jnp.einsum(self.equation, x, quantization.calibrated_kernel(self))
        elif mode == "float8":
            y = quantization.float8_matmul(
                self, x, self.kernel.value, training,
                product=lambda a, b: jnp.einsum(self.equation, a, b))
        else:
            y = jnp.einsum(self.equation, x, self.kernel.value)
        if self.bias is not None:
            bias = self.bias.value
            y = y + (quantization.float8_bias(self, bias) if mode == "float8" else bias)
        return self.activation(y)

    # ---- quantization (`quantize("int8" | "float8")`; gptq/awq below) --------
    # A scale is kept over the letters of its own tensor (`kernel_scale`: the
    # kernel's shape with its contracted axes of size 1) and moved to the
    # output's layout when the einsum's result is divided by it.
    def _contracted(self, letters):
        outputs = self._spec[2]
        return tuple(i for i, c in enumerate(letters) if c not in outputs)

    def _in_output_layout(self, scale, letters, out_ndim):
        """`scale` (over `letters`, contracted ones of size 1, after the input's
        ellipsis axes where it has them) moved to broadcast against the output."""
        _, _, outputs, ellipsis = self._spec
        n_extra = scale.ndim - len(letters)
        first = n_extra if ellipsis == "left" else 0
        scale = jnp.squeeze(scale, axis=tuple(first + a for a in self._contracted(letters)))
        kept = "".join(c for c in letters if c in outputs)
        ordered = "".join(c for c in outputs if c in kept)
        dots = "..." if n_extra else ""
        if ellipsis == "right":
            scale = jnp.einsum(f"{kept}{dots}->{ordered}{dots}", scale)
            sizes, extra = scale.shape[:len(ordered)], scale.shape[len(ordered):]
        else:
            scale = jnp.einsum(f"{dots}{kept}->{dots}{ordered}", scale)
            sizes, extra = scale.shape[n_extra:], scale.shape[:n_extra]
        size_of = dict(zip(ordered, sizes))
        layout = tuple(size_of.get(c, 1) for c in outputs)
        if ellipsis == "right":
            return scale.reshape(layout + extra + (1,) * (out_ndim - len(outputs) - n_extra))
        return scale.reshape(extra + layout)

    def _build_int8_kernel(self, kernel_shape):
        kernel_letters = self._spec[1]
        scale_shape = tuple(1 if i in self._contracted(kernel_letters) else n
                            for i, n in enumerate(kernel_shape))
        self.kernel = quantization.int8_weight(self, "kernel", kernel_shape)
        self.kernel_scale = quantization.scale_weight(self, "kernel_scale", scale_shape)

    def _int8_einsum(self, x):
        inputs_letters, kernel_letters, _, ellipsis = self._spec
        config = self.quantization_config or quantization_config.resolve("int8", None)
        inputs_quantizer = config.activation_quantizer
        offset = x.ndim - len(inputs_letters) if ellipsis == "left" else 0
        input_axes = tuple(offset + a for a in self._contracted(inputs_letters))
        batch = "..." if ellipsis else ""

        def forward(x, kernel, scale):
            out_ndim = x.ndim - len(inputs_letters) + len(self._spec[2])
            kernel_scale = self._in_output_layout(scale, kernel_letters, out_ndim)
            if inputs_quantizer is None:
                y = jnp.einsum(self.equation, x, kernel.astype(x.dtype))
                return y.astype(self.compute_dtype) / kernel_scale
            x, inputs_scale = inputs_quantizer(x, axis=input_axes)
            y = jnp.einsum(self.equation, x, kernel, preferred_element_type=jnp.int32)
            inputs_scale = self._in_output_layout(inputs_scale, inputs_letters, out_ndim)
            return y.astype(self.compute_dtype) / (inputs_scale * kernel_scale)

        def backward_product(upstream, kernel):
            outputs = self._spec[2]
            if ellipsis == "right":
                return jnp.einsum(f"{outputs}...,{kernel_letters}->{inputs_letters}...",
                                  upstream, kernel)
            return jnp.einsum(f"{batch}{outputs},{kernel_letters}->{batch}{inputs_letters}",
                              upstream, kernel)

        return quantization.matmul_dequantized_gradient(
            forward, lambda kernel, scale: kernel.astype(scale.dtype) / scale, x,
            self.kernel.value, self.kernel_scale.value, product=backward_product)

    def _quantize_weights(self, mode, config, type_check):
        self._quantizable(EinsumDense, mode, type_check,
                          modes=("int8", "float8", "gptq", "awq"))
        self.quantization_config = config
        if mode == "float8":
            quantization.float8_weights(self)
        elif mode in quantization.CALIBRATED_MODES:   # calibrated later by the model
            self._build_calibrated_kernel(mode, self.kernel.shape, config)
            quantization.order_weights(self, self._CALIBRATED_ORDER)
        else:
            default = quantizers.AbsMaxQuantizer(axis=self._contracted(self._spec[1]))
            quantizer = quantization_config.QuantizationConfig.weight_quantizer_or_default(
                config, default)
            values, scale = quantizer(self.kernel.value, to_numpy=True)
            quantization.forget_weight(self, self.kernel)
            self._build_int8_kernel(tuple(values.shape))
            self.kernel.assign(values)
            self.kernel_scale.assign(scale)
            quantization.order_weights(self, ("kernel", "bias", "kernel_scale"))
        self.__dict__["_dtype_policy"] = quantization.policy_for(self, mode, config)

    # ---- gptq / awq (`quantize("gptq" | "awq", config=...)`) -------------------
    _CALIBRATED_ORDER = ("bias", "kernel", "kernel_scale", "zero_point", "awq_scales", "g_idx")

    def _build_calibrated_kernel(self, mode, kernel_shape, config):
        quantization.calibrated_weights(self, mode, kernel_shape, config,
                                        zero_name="zero_point")
        setattr(self, f"{mode}_unpacked_column_size", self._grid_columns)

    def finish_calibration(self, values):
        quantization.finish_calibration(self, values)

    def get_config(self):
        calibrated = {f"{mode}_unpacked_column_size": getattr(self, f"{mode}_unpacked_column_size")
                      for mode in quantization.CALIBRATED_MODES
                      if getattr(self, f"{mode}_unpacked_column_size")}
        return {**super().get_config(), "equation": self.equation,
                "output_shape": self.partial_output_shape,
                "activation": activations.serialize(self.activation),
                "bias_axes": self.bias_axes,
                "kernel_initializer": initializers.serialize(self.kernel_initializer),
                "bias_initializer": initializers.serialize(self.bias_initializer),
                "kernel_regularizer": regularizers.serialize(self.kernel_regularizer),
                "bias_regularizer": regularizers.serialize(self.bias_regularizer),
                "activity_regularizer": regularizers.serialize(self.activity_regularizer),
                "kernel_constraint": constraints.serialize(self.kernel_constraint),
                "bias_constraint": constraints.serialize(self.bias_constraint),
                **quantization.config_entry(self), **calibrated}
