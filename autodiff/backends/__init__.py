"""Array backends. Each module implements the same small protocol: a `Backend` that creates
buffers (`from_nested`, `full`, `random`) and a buffer type with the arithmetic the ops and their
backward rules use. Every buffer a backend creates is counted by the device's `MemoryPool`."""
