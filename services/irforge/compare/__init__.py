"""Comparing systems: paired significance tests with corrections for multiple comparisons
(`irforge compare`), and agreement between the rankings of systems under two label sets or
two collections (`irforge agreement`)."""
