"""The editable sandbox: a k-nearest-neighbour classifier (the experiment's train.py)."""

K = 1


def distance(a, b):
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def predict(train, query):
    """Majority label among the K training points closest to ``query``."""
    nearest = sorted(train, key=lambda item: distance(item[0], query))[:K]
    votes = {}
    for _, label in nearest:
        votes[label] = votes.get(label, 0) + 1
    return max(sorted(votes), key=votes.get)
