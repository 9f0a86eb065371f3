"""Writes a global program that reshards a tensor between every ordered pair
of shardings of a matrix on a 2x2 mesh (dp, tp), for pmlir-run --check.

usage: reshard_pairs.py ROWS COLS [--pending]

The chain: the input passes through one tfm.sharding_constraint per
sharding, in the order of an Eulerian circuit of the complete directed
graph of the 11 shardings (each axis unused or splitting either dimension,
both in one dimension in either order), so that every ordered pair of
distinct shardings is one reshard of the partitioned program. The result
must be the input. With --pending, sums pending over dp, tp or both (a
matmul contracting over them, the other axis unused or splitting either
dimension) are also resharded to every sharding and summed into the result.
"""

import itertools
import sys


def shardings():
    out = []
    # Each axis: None (unused), 0 or 1 (the dimension it splits).
    for dp, tp in itertools.product([None, 0, 1], repeat=2):
        if dp is not None and dp == tp:
            out.append(tuple(tuple(["dp", "tp"] if d == dp else []) for d in range(2)))
            out.append(tuple(tuple(["tp", "dp"] if d == dp else []) for d in range(2)))
            continue
        dims = [[], []]
        if dp is not None:
            dims[dp].append("dp")
        if tp is not None:
            dims[tp].append("tp")
        out.append(tuple(tuple(d) for d in dims))
    return out


def eulerian_circuit(n):
    """Every ordered pair (i, j), i != j, as consecutive nodes of one walk."""
    edges = {i: [j for j in range(n) if j != i] for i in range(n)}
    stack, walk = [0], []
    while stack:
        v = stack[-1]
        if edges[v]:
            stack.append(edges[v].pop())
        else:
            walk.append(stack.pop())
    return walk[::-1]


def text(dims):
    return "[" + ", ".join("[" + ", ".join('"%s"' % a for a in d) + "]" for d in dims) + "]"


def main():
    rows, cols = int(sys.argv[1]), int(sys.argv[2])
    pending = "--pending" in sys.argv[3:]
    all_shardings = shardings()
    assert len(all_shardings) == 11
    walk = eulerian_circuit(len(all_shardings))
    pairs = set(zip(walk, walk[1:]))
    assert len(pairs) == 11 * 10
    t = "tensor<%dx%dxf32>" % (rows, cols)
    args = ['%%x: %s {tfm.name = "x"}' % t]
    body = []
    v = "%x"
    for i, node in enumerate(walk):
        body.append("    %%c%d = tfm.sharding_constraint %s to <%s> : %s" % (i, v, text(all_shardings[node]), t))
        v = "%%c%d" % i
    result = v
    if pending:
        k = 8
        n = 0
        for summed in (["dp"], ["tp"], ["dp", "tp"]):
            other = [a for a in ["dp", "tp"] if a not in summed]
            for place in [None, 0, 1] if other else [None]:
                xd, wd = [[], list(summed)], [list(summed), []]
                if place == 0:
                    xd[0] = other
                elif place == 1:
                    wd[1] = other
                args.append('%%a%d: tensor<%dx%dxf32> {tfm.name = "a%d", tfm.sharding = #tfm.sharding<%s>}'
                            % (n, rows, k, n, text(xd)))
                args.append('%%b%d: tensor<%dx%dxf32> {tfm.name = "b%d", tfm.sharding = #tfm.sharding<%s>}'
                            % (n, k, cols, n, text(wd)))
                body.append("    %%p%d = tfm.matmul %%a%d, %%b%d : tensor<%dx%dxf32>, tensor<%dx%dxf32> -> %s"
                            % (n, n, n, rows, k, k, cols, t))
                for j, target in enumerate(all_shardings):
                    body.append("    %%p%d_%d = tfm.sharding_constraint %%p%d to <%s> : %s" % (n, j, n, text(target), t))
                    body.append("    %%s%d_%d = tfm.add %s, %%p%d_%d : %s, %s" % (n, j, result, n, j, t, t))
                    result = "%%s%d_%d" % (n, j)
                n += 1
    print("module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {")
    print("  func.func @forward(%s) -> %s {" % (", ".join(args), t))
    print("\n".join(body))
    print("    return %s : %s" % (result, t))
    print("  }")
    print("}")


if __name__ == "__main__":
    main()
