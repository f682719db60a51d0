"""Value casts between integer and float dtypes, with ``cast_value``'s rounding and out-of-range rules.

Spec: https://github.com/zarr-developers/zarr-extensions/tree/main/codecs/cast_value

A value is first looked up in the scalar map; otherwise it is rounded as if
the target had an unbounded exponent range, then checked against the
target's finite range: out of range is an error unless ``out_of_range`` is
``"clamp"`` (to the integer limits, or to ±Infinity for floats) or ``"wrap"``
(modulo ``2**bits``, integer targets only). NaN and infinities stay
themselves between floats and cannot become integers. Every result is the
exactly rounded one: no double rounding through float64.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, cast, get_args

import numpy as np

from ..core.dtypes.kinds import is_integer
from ..errors import CodecError

Rounding = Literal["nearest-even", "towards-zero", "towards-positive", "towards-negative", "nearest-away"]
OutOfRange = Literal["clamp", "wrap"]
ROUNDINGS: tuple[str, ...] = get_args(Rounding)
OUT_OF_RANGE: tuple[str, ...] = get_args(OutOfRange)
_EXACT_IN_FLOAT64 = 2**53  # integers up to this magnitude are exact float64 values


def cast_array(
    values: np.ndarray,
    target: np.dtype,
    rounding: Rounding = "nearest-even",
    out_of_range: OutOfRange | None = None,
    scalar_map: Sequence[tuple[np.generic, np.generic]] = (),
) -> np.ndarray:
    """``values`` converted to ``target`` by numerical value; `CodecError` for a value with no rule.

    ``scalar_map`` pairs (source scalar, target scalar) apply first; the first
    pair whose key equals a value (NaN matches NaN) wins.

    >>> cast_array(np.array([2.5, 300.0, np.nan]), np.dtype("uint8"), "nearest-away", "clamp",
    ...            [(np.float64("nan"), np.uint8(0))]).tolist()
    [3, 255, 0]
    """
    if not scalar_map:
        return np.asarray(_cast(values, target, rounding, out_of_range))
    hits = [np.isnan(values) if np.isnan(key) else values == key for key, _ in scalar_map]
    mapped = np.logical_or.reduce(hits)
    placeholder = np.zeros((), values.dtype)  # zero casts to every type; mapped values are overwritten below
    out = np.asarray(_cast(np.where(mapped, placeholder, values), target, rounding, out_of_range))
    for hit, (_, value) in reversed(list(zip(hits, scalar_map))):  # the first pair is written last
        out[hit] = value
    return out


def _cast(
    values: np.ndarray, target: np.dtype, rounding: Rounding, out_of_range: OutOfRange | None
) -> np.ndarray:
    if is_integer(values.dtype) and is_integer(target):
        return _int_to_int(values, target, out_of_range)
    if is_integer(target):
        return _float_to_int(values, target, rounding, out_of_range)
    if is_integer(values.dtype):
        return _int_to_float(values, target, rounding, out_of_range)
    return _float_to_float(values, target, rounding, out_of_range)


def _out_of_range(value: object, target: np.dtype) -> CodecError:
    return CodecError(
        f"codec 'cast_value': value {value!r} is out of the range of {target}; set configuration.out_of_range "
        "('clamp' or 'wrap'), or map the value with configuration.scalar_map"
    )


def _int_to_int(values: np.ndarray, target: np.dtype, out_of_range: OutOfRange | None) -> np.ndarray:
    source, goal = np.iinfo(values.dtype), np.iinfo(target)
    if out_of_range == "wrap" or (source.min >= goal.min and source.max <= goal.max):
        return values.astype(target)  # numpy converts integers modulo 2**bits
    low, high = values.dtype.type(max(source.min, goal.min)), values.dtype.type(min(source.max, goal.max))
    if out_of_range == "clamp":
        return np.asarray(np.clip(values, low, high)).astype(target)
    outside = (values < low) | (values > high)
    if outside.any():
        raise _out_of_range(values[outside][0].item(), target)
    return values.astype(target)


def _round_integral(x: np.ndarray, rounding: Rounding) -> np.ndarray:
    if rounding == "nearest-away":
        whole = np.trunc(x)
        return np.asarray(np.where(np.abs(x - whole) >= 0.5, whole + np.sign(x), whole))
    functions = {"nearest-even": np.rint, "towards-zero": np.trunc, "towards-positive": np.ceil}
    return cast(np.ndarray, functions.get(rounding, np.floor)(x))


def _float_to_int(
    values: np.ndarray, target: np.dtype, rounding: Rounding, out_of_range: OutOfRange | None
) -> np.ndarray:
    x = values.astype(np.float64, copy=False)  # exact; rounding to an integer does not depend on the width
    with np.errstate(invalid="ignore"):  # inf - inf while rounding: infinities are refused below
        rounded = _round_integral(x, rounding)
    info = np.iinfo(target)
    low, top = float(info.min), float(info.max) + 1.0  # both powers of two (or zero): exact
    if not rounded.size or (rounded.min() >= low and rounded.max() < top):  # NaN and inf fail this too
        return rounded.astype(target)
    finite = np.isfinite(x)
    if not finite.all():
        raise CodecError(
            f"codec 'cast_value': {x[~finite][0]} cannot become an integer of {target}; "
            'map it with configuration.scalar_map (e.g. ["NaN", 0])'
        )
    if out_of_range == "wrap":
        return _wrap(rounded, 8 * target.itemsize).astype(target)
    over, under = rounded >= top, rounded < low
    if out_of_range is None:
        raise _out_of_range(values[over | under][0].item(), target)
    clipped = np.clip(rounded, low, np.nextafter(top, 0.0)).astype(target)
    return np.asarray(np.where(over, target.type(info.max), clipped))


def _wrap(rounded: np.ndarray, bits: int) -> np.ndarray:
    """Integral floats modulo ``2**bits`` as int64 in ``[-2**(bits-1), 2**(bits-1))`` (each step is exact)."""
    modulus, half = 2.0**bits, 2.0 ** (bits - 1)
    rest = np.fmod(rounded, modulus)
    rest = np.where(rest >= half, rest - modulus, rest)
    return np.asarray(np.where(rest < -half, rest + modulus, rest)).astype(np.int64)


def _float_to_float(
    values: np.ndarray, target: np.dtype, rounding: Rounding, out_of_range: OutOfRange | None
) -> np.ndarray:
    if target.itemsize >= values.dtype.itemsize:
        return values.astype(target, copy=False)  # widening is exact
    with np.errstate(over="ignore"):
        y = values.astype(target)  # IEEE nearest-even; overflow gives ±inf
    if rounding != "nearest-even":
        with np.errstate(over="ignore", invalid="ignore"):  # steps to infinity, inf - inf
            y = _redirect(values, y, rounding)
    if out_of_range is None and np.isinf(y).any():
        overflow = np.isinf(y) & np.isfinite(values)
        if overflow.any():
            raise _out_of_range(values[overflow][0].item(), target)
    return y  # "clamp" is ±inf for floats, where the overflow already is


def _redirect(x: np.ndarray, y: np.ndarray, rounding: Rounding) -> np.ndarray:
    """Nearest-even results ``y`` of ``x`` moved one step where ``rounding`` picks the other neighbour."""
    back = y.astype(x.dtype)  # exact
    if rounding == "nearest-away":
        away = np.nextafter(y, np.copysign(np.inf, x).astype(y.dtype))
        tie = (np.abs(x - back) == np.abs(away.astype(x.dtype) - x)) & (np.abs(back) < np.abs(x))
        return np.where(tie, away, y)
    if rounding == "towards-zero":
        step, toward = np.abs(back) > np.abs(x), np.zeros((), y.dtype)
    elif rounding == "towards-positive":
        step, toward = back < x, np.full((), np.inf, y.dtype)
    else:
        step, toward = back > x, np.full((), -np.inf, y.dtype)
    beyond = np.abs(x) >= 2.0 ** np.finfo(y.dtype).maxexp  # rounds past the largest finite value in any mode
    return np.where(step & ~beyond, np.nextafter(y, toward), y)


def _int_to_float(
    values: np.ndarray, target: np.dtype, rounding: Rounding, out_of_range: OutOfRange | None
) -> np.ndarray:
    big = (values > _EXACT_IN_FLOAT64) | (values < -_EXACT_IN_FLOAT64) if values.dtype.itemsize == 8 else None
    exact = values.astype(np.float64) if big is None else np.where(big, 0, values).astype(np.float64)
    out = _float_to_float(exact, target, rounding, out_of_range)
    if big is not None and big.any():
        out[big] = [_round_big_int(int(v), target, rounding) for v in values[big]]
        if out_of_range is None and np.isinf(out[big]).any():
            raise _out_of_range(int(values[big][np.isinf(out[big])][0]), target)
    return out


def _round_big_int(v: int, target: np.dtype, rounding: Rounding) -> np.floating:
    """``v`` (beyond 2**53) rounded to ``target`` exactly, with Python integers."""
    ftype = target.type
    if abs(v) >= 2 ** int(np.finfo(target).maxexp):
        return cast(np.floating, ftype(np.inf if v > 0 else -np.inf))
    low = ftype(float(v))  # within one step of the answer
    while int(low) > v:
        low = np.nextafter(low, ftype(-np.inf))
    while int(np.nextafter(low, ftype(np.inf))) <= v:
        low = np.nextafter(low, ftype(np.inf))
    high = np.nextafter(low, ftype(np.inf))
    if int(low) == v:
        return cast(np.floating, low)
    twice, ends = 2 * v, int(low) + int(high)
    choose_high = {
        "towards-positive": True,
        "towards-negative": False,
        "towards-zero": v < 0,
        "nearest-away": twice > ends or (twice == ends and v > 0),
        "nearest-even": twice > ends
        or (twice == ends and int(np.asarray(high).view(f"u{target.itemsize}")) % 2 == 0),
    }[rounding]
    return cast(np.floating, high if choose_high else low)
