"""The small helper layer of the app: programs, drawing, widgets. Pages call these and the engine."""
