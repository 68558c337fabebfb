"""sf_train."""
