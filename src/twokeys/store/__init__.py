"""Index storage backends. The embedded default is a directory (:mod:`twokeys.store.local`)."""
