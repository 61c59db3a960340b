import contextlib
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_cli.core.errors import BadInputError
from mha_cli.core.quantities import format_bytes, format_count, parse_byte_size, parse_param_count, parse_token_count


@pytest.mark.parametrize(
    ("text", "expected"),
    [("7B", 7_000_000_000), ("350M", 350_000_000), ("1.5T", 1_500_000_000_000), ("125k", 125_000), ("70b", 70 * 10**9)],
)
def test_param_counts_are_decimal(text, expected):
    assert parse_param_count(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8k", 8192), ("128K", 131072), ("32768", 32768), ("1M", 1_048_576), ("1.5k", 1536), (4096, 4096)],
)
def test_token_counts_are_binary(text, expected):
    assert parse_token_count(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [("80GB", 80 * 10**9), ("24GiB", 24 * 2**30), ("512MiB", 512 * 2**20), ("1TB", 10**12), ("4096", 4096)],
)
def test_byte_sizes_follow_the_unit(text, expected):
    assert parse_byte_size(text) == expected


@pytest.mark.parametrize("text", ["", "abc", "7X", "-7B", "0", "0k", "1.2.3", "7 B B", "1.0001k", "nan", "inf"])
def test_bad_quantities_raise_one_clear_error(text):
    with pytest.raises(BadInputError) as info:
        parse_token_count(text) if not text.endswith("B") else parse_param_count(text)
    assert "\n" not in str(info.value)


def test_format_bytes():
    assert format_bytes(131072) == "128.0 KiB"
    assert format_bytes(512) == "512 B"


@given(st.integers(min_value=1, max_value=10**15))
def test_plain_integers_round_trip(n):
    assert parse_token_count(str(n)) == n
    assert parse_param_count(str(n)) == n
    assert parse_byte_size(str(n)) == n


@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(["K", "M", "B", "T"]))
def test_param_suffixes_scale_exactly(n, suffix):
    factor = {"K": 10**3, "M": 10**6, "B": 10**9, "T": 10**12}[suffix]
    assert parse_param_count(f"{n}{suffix}") == n * factor


@given(st.integers(min_value=1, max_value=10**6), st.sampled_from(["k", "K", "M"]))
def test_token_suffixes_scale_exactly(n, suffix):
    assert parse_token_count(f"{n}{suffix}") == n * (2**20 if suffix == "M" else 2**10)


@given(st.text(max_size=12))
def test_parsers_never_raise_anything_but_bad_input(text):
    for parse in (parse_param_count, parse_token_count, parse_byte_size):
        try:
            value = parse(text)
        except BadInputError:
            continue
        assert isinstance(value, int) and value > 0


def test_negative_numbers_say_positive_and_g_is_a_suffix():
    with pytest.raises(BadInputError, match="must be positive"):
        parse_token_count("-5")
    assert parse_token_count("1G") == 2**30
    assert parse_param_count("7G") == 7 * 10**9


@pytest.mark.parametrize("text", ["1e99999999", "1e400B", "1e-99999999"])
def test_huge_exponents_are_bad_input_not_a_crash(text):
    with pytest.raises(BadInputError, match="out of range"):
        parse_param_count(text) if text.endswith("B") else parse_token_count(text)


def _seconds(function, *args) -> float:
    start = time.perf_counter()
    with contextlib.suppress(BadInputError):
        function(*args)
    return time.perf_counter() - start


@pytest.mark.parametrize("parse", [parse_param_count, parse_token_count, parse_byte_size])
def test_long_input_is_refused_at_once_quoting_a_short_prefix(parse):
    text = "1" * 20_000 + "!"  # was about 20 s with the old quadratic pattern
    with pytest.raises(BadInputError, match=r"too long") as info:
        parse(text)
    assert len(str(info.value)) < 200 and "20,001 characters" in str(info.value)
    assert _seconds(parse, text) < 0.5  # a guard against the old 20 s, loose enough for a loaded CI machine


def test_the_number_pattern_is_linear_even_without_the_length_cap():
    from mha_cli.core.quantities import _NUMBER_AND_SUFFIX

    short, long = "1" * 20_000 + "!", "1" * 200_000 + "!"
    t_short = min(_seconds(_NUMBER_AND_SUFFIX.fullmatch, short) for _ in range(3))
    t_long = min(_seconds(_NUMBER_AND_SUFFIX.fullmatch, long) for _ in range(3))
    assert t_short < 1.0 and t_long < 2.0  # quadratic matching: about 20 s and half an hour


def test_many_digits_after_the_point_stay_exact():
    # 28 significant digits (Decimal's default precision) would round this product to a whole 1,024
    with pytest.raises(BadInputError, match="not a whole number"):
        parse_token_count("1.00000000000000000000000000001k")
    assert parse_param_count("1.000000000001T") == 10**12 + 1
    assert parse_token_count("123456789012345678901234567890") == 123456789012345678901234567890


@pytest.mark.parametrize("value", [True, False])
def test_booleans_are_not_counts(value):
    with pytest.raises(BadInputError, match=r"not (true|false)"):
        parse_token_count(value)


@pytest.mark.parametrize(
    ("count", "shown"),
    [(8_030_261_248, "8.03B"), (3.51e12, "3.51T"), (99_999e12, "99,999T"), (1e30 * 1e9, "1e+39"), (2.5e21, "2.5e+21")],
)
def test_counts_past_a_million_t_are_shown_in_powers_of_ten(count, shown):
    """``recommend --params 1e30B`` was refused as "parameter budget 1,000,000,000,000,000,013,287,555,072T is too
    large": a float's rounding noise printed as digits the user never typed."""
    assert format_count(count) == shown


def test_an_unknown_suffix_is_named_as_typed():
    """The token-count error echoed 'Q' for a typed '8q' (trial 271 #5); units still match in either case."""
    with pytest.raises(BadInputError, match="unknown suffix 'q' in token count '8q'"):
        parse_token_count("8q")
    with pytest.raises(BadInputError, match="unknown unit 'gx' in memory size '80gx'"):
        parse_byte_size("80gx")
    assert parse_token_count("8K") == parse_token_count("8k") == 8192
    assert parse_byte_size("24gib") == 24 * 2**30
