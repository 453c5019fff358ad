"""Seeded mutations of serialized messages for differential tests against rclpy."""


def mutated(data, rng, cut=True):
    """``data`` with 1-3 edits after its 4-byte encapsulation: a byte overwritten, 1-8
    random bytes inserted, 1-8 deleted, or (``cut``) everything from a point on deleted."""
    data = bytearray(data)
    for _ in range(rng.integers(1, 4)):
        if len(data) <= 4:
            break
        at = int(rng.integers(4, len(data)))
        kind = rng.integers(0, 4 if cut else 3)
        if kind == 0:
            data[at] = int(rng.integers(0, 256))
        elif kind == 1:
            data[at:at] = rng.bytes(int(rng.integers(1, 9)))
        elif kind == 2:
            del data[at:at + int(rng.integers(1, 9))]
        else:
            del data[at:]
    return bytes(data)
