"""Read every raw medical format into (array, header facts) and render it to an 8-bit PNG."""
