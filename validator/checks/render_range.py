"""Whether a written image is its >8-bit source cast to 8 bits by clipping, told from the histogram.

A 12/16-bit or float source converted with a plain cast (``clip(values, 0, 255)``, no window) saturates
exactly the pixels whose raw values leave 0..255: the written image's white share equals the share of raw
values at or above 255, its black share the share at or below 0. A faithful rendering windows the full range
instead. So when the source's values leave the 8-bit range, the written image's black and white shares match
the raw out-of-range shares, and the written image is clearly more saturated than the source's own rendering,
the image is a clipped cast (`source_renders_like_image` fails it).
"""

from __future__ import annotations

from validator._raw import PixelStats

__all__ = ["clipped_cast"]

TOLERANCE = 0.02
"""Absolute slack on each share (resampling and rounding at the range ends)."""
CAST_MARGIN = 0.05
"""NCC gain over the faithful rendering above which the written image is taken for the clipped cast."""
MIN_BEYOND = 0.05
"""Below this share of out-of-range raw values a cast and a windowed rendering look alike: no verdict."""


def clipped_cast(
    shares: tuple[float, float] | None,
    written: PixelStats | None,
    faithful: PixelStats | None,
    cast: tuple[float, bytes] | None = None,
) -> str | None:
    """The message for a written image that is its source clipped to 0..255, or None.

    Args:
        shares: The declared view's raw shares at/above 255 and at/below 0 (`validator._raw.range_shares`).
        written: The written image's pixel stats.
        faithful: The stats of the source's rendering at the declared view.
        cast: When known, how the written image compares with the view cast by clipping: the correlation
            gain over the faithful rendering (NCC with the cast minus NCC with the faithful one) and the
            cast's pixel digest. A written image that is the cast pixel for pixel, or correlates clearly
            better with it, is one whatever its histogram.

    Returns:
        What to tell the agent, or None when the image is not a clipped cast.
    """
    if shares is None or written is None or faithful is None:
        return None
    if cast is not None and written.digest != faithful.digest:
        gain, digest = cast
        if (digest and digest == written.digest) or gain > CAST_MARGIN:
            return (
                "the image is the source cast to 8 bits by clipping at 0 and 255 (its values leave the 8-bit "
                "range); window the full range instead"
            )
    above, below = shares
    if above + below < MIN_BEYOND or written.saturated < faithful.saturated + MIN_BEYOND:
        return None
    if (
        abs(written.white - above) > TOLERANCE + 0.05 * above
        or abs(written.black - below) > TOLERANCE + 0.05 * below
    ):
        return None
    return (
        f"{written.white:.0%} of the image is white and {written.black:.0%} black, exactly the source's "
        "values "
        "above 255 and below 0: it was cast to 8 bits by clipping; window the full range instead"
    )
