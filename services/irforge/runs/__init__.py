"""Runs and candidate lists brought from elsewhere: the readers of the field's run layouts."""
