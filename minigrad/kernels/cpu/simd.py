"""Explicit SIMD vectors for Numba kernels: a register-sized vector type, its loads and
stores (whole and masked), and the element-wise arithmetic and horizontal reductions of
softmax's row passes.

Numba leaves LLVM's SLP vectoriser off and its loop vectoriser only vectorises an innermost
loop, so a row's max and sum, kept across the loop over the row, would stay scalar. A
`SimdVector` is an LLVM `<lanes x dtype>` value: held in a local variable, it stays in a
register.

Contract: `lanes(x)` is one register's worth of x's dtype (VECTOR_BYTES: 8 float32 or 4
float64 with AVX2, twice that with AVX-512). Every access reads or writes
`matrix[row, column : column + lanes]` of a C-contiguous 2-D float array; the caller keeps
it in bounds (the `_partial` forms touch only the first `count` lanes, 0 <= count <=
lanes, and read zeros, or `fill`, elsewhere). No bounds checks.

Numba's cache checks only the timestamp of a kernel's own file: after editing this one,
delete the cached softmax.* and cross_entropy.* .nbi and .nbc files in
__pycache__ (fast_exp.py imports this module; see __init__.py).
"""

from llvmlite import binding as llvm
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, models, register_model


def _vector_bytes() -> int:
    """The width of one vector register of this machine: 64 bytes with AVX-512 (the
    (64, 128, 1000) softmax forward ran 1.3x faster than with 32 on a Zen 5), else 32
    (AVX2; on a narrower target LLVM splits the vector)."""
    features = llvm.get_host_cpu_features()
    return 64 if features.get("avx512f", False) else 32


VECTOR_BYTES = _vector_bytes()


class SimdVector(types.Type):
    """A vector of `lanes` values of a float dtype, held in one register."""

    def __init__(self, dtype, lanes):
        self.dtype = dtype
        self.lanes = lanes
        super().__init__(name=f"SimdVector({dtype}, {lanes})")


@register_model(SimdVector)
class _SimdVectorModel(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        element = dmm.lookup(fe_type.dtype).get_value_type()
        super().__init__(dmm, fe_type, ir.VectorType(element, fe_type.lanes))


def _vector_type(matrix):
    return SimdVector(matrix.dtype, VECTOR_BYTES * 8 // matrix.dtype.bitwidth)


def _check_matrix(matrix):
    if not (isinstance(matrix, types.Array) and matrix.ndim == 2 and matrix.layout == "C"):
        raise TypeError("simd accesses need a C-contiguous 2-D array")
    if matrix.dtype not in (types.float32, types.float64):
        raise TypeError("simd accesses need float32 or float64")


def _element_pointer(context, builder, matrix_type, matrix, row, column):
    array = context.make_array(matrix_type)(context, builder, matrix)
    return cgutils.get_item_pointer2(
        context,
        builder,
        array.data,
        cgutils.unpack_tuple(builder, array.shape),
        cgutils.unpack_tuple(builder, array.strides),
        matrix_type.layout,
        [row, column],
    )


def _lane_mask(builder, lanes, count):
    """<lanes x i1>: lane < count."""
    index_type = ir.VectorType(ir.IntType(64), lanes)
    splat = builder.insert_element(ir.Constant(index_type, None), count, ir.IntType(32)(0))
    splat = builder.shuffle_vector(
        splat, splat, ir.Constant(ir.VectorType(ir.IntType(32), lanes), [0] * lanes)
    )
    return builder.icmp_signed("<", ir.Constant(index_type, list(range(lanes))), splat)


def _vector_suffix(vector):
    """LLVM's overload suffix of a vector type: v8f32, v4f64."""
    return f"v{vector.count}{'f32' if vector.element == ir.FloatType() else 'f64'}"


def _masked_intrinsic(builder, name, vector, pointer, returns_vector):
    suffix = _vector_suffix(vector)
    mask = ir.VectorType(ir.IntType(1), vector.count)
    if returns_vector:
        signature = ir.FunctionType(vector, [pointer.type, mask, vector])
    else:
        signature = ir.FunctionType(ir.VoidType(), [vector, pointer.type, mask])
    return cgutils.get_or_insert_function(builder.module, signature, f"{name}.{suffix}.p0")


def _masked_load(context, builder, signature, args, fill):
    """A vector of matrix[row, column : column + count] (args), the lanes past `count`
    holding `fill` (an LLVM scalar) or zeros when `fill` is None."""
    vector = signature.return_type
    pointer = _element_pointer(context, builder, signature.args[0], *args[:3])
    llvm_vector = context.get_value_type(vector)
    function = _masked_intrinsic(builder, "llvm.masked.load", llvm_vector, pointer, True)
    mask = _lane_mask(builder, vector.lanes, args[3])
    passthrough = (ir.Constant(llvm_vector, None) if fill is None
                   else _splat(builder, llvm_vector, fill))
    return builder.call(function, [pointer, mask, passthrough])


@intrinsic
def lanes(typingctx, matrix):
    """The number of values in one vector of matrix's dtype (a compile-time constant)."""
    _check_matrix(matrix)
    count = _vector_type(matrix).lanes

    def codegen(context, builder, signature, args):
        return context.get_constant(types.intp, count)

    return types.intp(matrix), codegen


@intrinsic
def zeros(typingctx, matrix):
    """A vector of zeros of matrix's dtype."""
    _check_matrix(matrix)
    vector = _vector_type(matrix)

    def codegen(context, builder, signature, args):
        return ir.Constant(context.get_value_type(vector), None)

    return vector(matrix), codegen


@intrinsic
def load(typingctx, matrix, row, column):
    """matrix[row, column : column + lanes] as a vector."""
    _check_matrix(matrix)
    vector = _vector_type(matrix)

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], *args)
        vector_pointer = builder.bitcast(pointer, context.get_value_type(vector).as_pointer())
        return builder.load(vector_pointer, align=matrix.dtype.bitwidth // 8)

    return vector(matrix, types.intp, types.intp), codegen


@intrinsic
def load_partial(typingctx, matrix, row, column, count):
    """matrix[row, column : column + count], zero-filled to a vector."""
    _check_matrix(matrix)
    vector = _vector_type(matrix)

    def codegen(context, builder, signature, args):
        return _masked_load(context, builder, signature, args, None)

    return vector(matrix, types.intp, types.intp, types.intp), codegen


@intrinsic
def store(typingctx, matrix, row, column, value):
    """matrix[row, column : column + lanes] = value."""
    _check_matrix(matrix)

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], *args[:3])
        vector_pointer = builder.bitcast(pointer, args[3].type.as_pointer())
        builder.store(args[3], vector_pointer, align=matrix.dtype.bitwidth // 8)
        return context.get_dummy_value()

    return types.none(matrix, types.intp, types.intp, _vector_type(matrix)), codegen


@intrinsic
def store_partial(typingctx, matrix, row, column, count, value):
    """matrix[row, column : column + count] = value[:count]."""
    _check_matrix(matrix)

    def codegen(context, builder, signature, args):
        pointer = _element_pointer(context, builder, signature.args[0], *args[:3])
        function = _masked_intrinsic(builder, "llvm.masked.store", args[4].type, pointer, False)
        mask = _lane_mask(builder, args[4].type.count, args[3])
        builder.call(function, [args[4], pointer, mask])
        return context.get_dummy_value()

    vector = _vector_type(matrix)
    return types.none(matrix, types.intp, types.intp, types.intp, vector), codegen


# Row reductions (softmax's max and sum) need a fill value for a row's last partial vector
# and element-wise arithmetic between vectors.


def _splat(builder, vector_type, value):
    """A vector with `value` in every lane."""
    lanes_ = vector_type.count
    single = builder.insert_element(ir.Constant(vector_type, None), value, ir.IntType(32)(0))
    return builder.shuffle_vector(
        single, single, ir.Constant(ir.VectorType(ir.IntType(32), lanes_), [0] * lanes_)
    )


@intrinsic
def splat(typingctx, matrix, value):
    """A vector of matrix's dtype with `value` in every lane."""
    _check_matrix(matrix)
    vector = _vector_type(matrix)

    def codegen(context, builder, signature, args):
        value = context.cast(builder, args[1], signature.args[1], vector.dtype)
        return _splat(builder, context.get_value_type(vector), value)

    return vector(matrix, value), codegen


@intrinsic
def load_partial_filled(typingctx, matrix, row, column, count, fill):
    """matrix[row, column : column + count], filled to a vector with `fill`."""
    _check_matrix(matrix)
    vector = _vector_type(matrix)

    def codegen(context, builder, signature, args):
        fill = context.cast(builder, args[4], signature.args[4], vector.dtype)
        return _masked_load(context, builder, signature, args, fill)

    return vector(matrix, types.intp, types.intp, types.intp, fill), codegen


def _maximum(builder, a, b):
    # a > b ? a : b compiles to one vmaxps / vmaxpd (NaN in a gives b)
    return builder.select(builder.fcmp_ordered(">", a, b), a, b)


def _element_wise(build):
    """An intrinsic (a, b) -> vector from build(builder, a, b) on two vectors of one type."""

    def typer(typingctx, a, b):
        if not isinstance(a, SimdVector) or a != b:
            raise TypeError("element-wise simd operations need two vectors of one type")

        def codegen(context, builder, signature, args):
            return build(builder, *args)

        return a(a, b), codegen

    return intrinsic(typer)


add = _element_wise(lambda builder, a, b: builder.fadd(a, b))
subtract = _element_wise(lambda builder, a, b: builder.fsub(a, b))
multiply = _element_wise(lambda builder, a, b: builder.fmul(a, b))
maximum = _element_wise(_maximum)


def _reduction(build):
    """An intrinsic vector -> scalar folding the lanes pairwise with build(builder, a, b)."""

    def typer(typingctx, vector):
        if not isinstance(vector, SimdVector):
            raise TypeError("a simd reduction needs a vector")

        def codegen(context, builder, signature, args):
            value = args[0]
            width = vector.lanes
            while width > 1:
                # fold the upper half onto the lower half: log2(lanes) steps, not lanes - 1
                width //= 2
                indices = ir.VectorType(ir.IntType(32), width)
                low = builder.shuffle_vector(value, value, ir.Constant(indices, list(range(width))))
                upper = list(range(width, 2 * width))
                high = builder.shuffle_vector(value, value, ir.Constant(indices, upper))
                value = build(builder, low, high)
            return builder.extract_element(value, ir.IntType(32)(0))

        return vector.dtype(vector), codegen

    return intrinsic(typer)


reduce_sum = _reduction(lambda builder, a, b: builder.fadd(a, b))
reduce_max = _reduction(_maximum)
