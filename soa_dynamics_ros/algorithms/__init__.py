"""The O(N) recursions over a :class:`~soa_dynamics_ros.multibody.tree.BodyTree`.

One algorithm per module.  Each takes the tree (constants) and hinge-space
arrays (one entry per body, index 0 unused for the root) and returns results;
none keeps state.  Scatter recursions run base to tips (``for i in 1..nb-1``),
gather recursions tips to base (``for i in nb-1..1``), using ``parent[i] < i``.
"""
