//===- TfmAttrs.td - tfm attributes: mesh and sharding -----*- tablegen -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_TFMATTRS_TD
#define PMLIR_DIALECT_TFM_IR_TFMATTRS_TD

include "pmlir/Dialect/Tfm/IR/TfmDialect.td"
include "mlir/IR/AttrTypeBase.td"

class Tfm_Attr<string name, string attrMnemonic> : AttrDef<Tfm_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def Tfm_MeshAttr : Tfm_Attr<"Mesh", "mesh"> {
  let summary = "a device mesh: named axes with sizes";
  let description = [{
    The mesh a global program is sharded over, as the module attribute
    `tfm.mesh`: axes in order, the first the slowest-varying in the grid of
    the partitioned program (`shard.grid` axis i is the mesh's axis i, or
    the part of it the grid's `tfm.grid_axes` names where shardings use
    sub-axes; `pmlir-run --mesh` must list the same axes and sizes).

    The ranks are laid out on the axes in a rank order, fastest-varying
    axis first: by default tp, cp, ep, dp, pp (Megatron's tp-cp-ep-dp-pp,
    tensor-parallel ranks neighbours), or as `rank_order` lists it (every
    axis once; needed where an axis has another name). `pmlir-attach-mesh`
    puts it on a module.

    ```mlir
    module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4>} { ... }
    module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4, rank_order = [dp, tp]>} { ... }
    ```
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::StringAttr", "axis names">:$axes,
                        ArrayRefParameter<"int64_t", "axis sizes">:$sizes,
                        OptionalArrayRefParameter<"::mlir::StringAttr",
                          "axis names, fastest first (empty: the default order)">:$rankOrder);
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<::mlir::StringAttr>":$axes,
                     "::llvm::ArrayRef<int64_t>":$sizes), [{
      return $_get($_ctxt, axes, sizes, ::llvm::ArrayRef<::mlir::StringAttr>());
    }]>
  ];
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// `mesh` as an attribute: its axes in order, and its rank order where it
    /// is not the default.
    static MeshAttr get(::mlir::MLIRContext *context, const ::pmlir::Mesh &mesh);
    /// The mesh this attribute describes, or std::nullopt with `error` set
    /// (an axis with no default place in the rank order and none given).
    std::optional<::pmlir::Mesh> toMesh(std::string &error) const;

    /// Index of the whole axis `name`, or -1 (also for a sub-axis name).
    int64_t axisIndex(::llvm::StringRef name) const;
    /// Size of axis or sub-axis `name` (1 when the mesh has no such axis).
    int64_t axisSize(::llvm::StringRef name) const;
    int64_t numDevices() const;

    /// A whole axis or a sub-axis ("tp:(p)s"), as pmlir::SubAxis says.
    using SubAxis = ::pmlir::SubAxis;
    /// `name` as a sub-axis of this mesh, or std::nullopt when it names no
    /// axis or a part that does not divide its axis.
    std::optional<SubAxis> subAxis(::llvm::StringRef name) const;
    /// The name of the part of `axis` of `size` below `pre` (the axis'
    /// own name for the whole axis), uniqued in the context.
    ::llvm::StringRef subAxisName(int64_t axis, int64_t pre, int64_t size) const;
    /// Whether two axis names share devices (an axis and its parts; two
    /// parts that overlap).
    bool overlap(::llvm::StringRef a, ::llvm::StringRef b) const;
    /// `axes` with adjacent parts of one axis merged (["tp:(1)2", "tp:(2)2"]
    /// on a tp of 4 is ["tp"]).
    ::llvm::SmallVector<::llvm::StringRef> mergeSubAxes(::llvm::ArrayRef<::llvm::StringRef> axes) const;
  }];
}

def Tfm_ShardingAttr : Tfm_Attr<"Sharding", "sharding"> {
  let summary = "how a global tensor is split over the mesh";
  let description = [{
    Per tensor dimension, the ordered list of mesh axes that split it (the
    first is the major one: with `[["dp", "tp"]]` block `dp * |tp| + tp` of
    dimension 0 lives on the device at (dp, tp)); axes named by no dimension
    replicate the tensor. `pending` lists the axes over which the value is a
    pending sum: each device holds a partial value and the tensor is their
    sum (the output of a matmul whose contracting dimension is split).

    An axis may be a sub-axis, as in Shardy: `"tp:(p)s"` is the part of
    axis `tp` of size `s` below its `p` major positions (on a tp of 4,
    `"tp:(1)2"` is the major half, `"tp:(2)2"` the minor half); a tensor
    split over `"tp:(1)2"` is replicated over the minor half. Propagation
    makes them where a factor smaller than an axis divides it (2 kv heads
    under 8 query heads on a tp of 4). Collectives run over sub-axes too:
    the partitioned program's grid cuts the axis into its parts.

    As a user annotation (on an argument, a result or a
    `tfm.sharding_constraint`) it is fixed: propagation does not change it.
    Two controls loosen that, as Shardy's open dimensions and priorities do:

    - `open = [d, ...]`: dimensions propagation may still split further;
      their axes are a prefix that propagation may extend (with
      `[[], ["tp"]]` and `open = [0]`, dimension 0 may get `dp` from the
      rest of the program; dimension 1 stays as given).
    - `priority = p` (default 0): annotations propagate in rounds of
      increasing `p`; a round completes what its annotations imply before
      later rounds' annotations are seen, so where they disagree the lower
      `p` decides the values between them.

    A dimension made of equal parts that are split one by one (GPT-2's
    fused QKV weight: the q, k and v parts of its output dimension, each
    split over tp, so that a device holds its heads of all three) says so
    with `parts = [...]`, one count per dimension (1: a plain dimension).
    Each part is split as the dimension's axes say; a device's block of the
    dimension is its block of every part, in part order. Propagation makes
    them where an op's rule splits a minor factor under unsplit major ones
    (a `tfm.split` whose parts are split).

    ```mlir
    #tfm.sharding<[[], ["tp"]]>                    // column-parallel weight
    #tfm.sharding<[[], ["tp"]], parts = [1, 3]>    // fused QKV weight
    #tfm.sharding<[["dp"], [], []], pending = ["tp"]>   // row-parallel output
    #tfm.sharding<[[], ["tp"]], open = [0], priority = 1>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims,
                        OptionalParameter<"::mlir::ArrayAttr">:$pending,
                        OptionalArrayRefParameter<"int64_t">:$open,
                        DefaultValuedParameter<"int64_t", "0">:$priority,
                        OptionalArrayRefParameter<"int64_t">:$parts);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<::llvm::SmallVector<::llvm::StringRef>>":$dims,
                     "::llvm::ArrayRef<::llvm::StringRef>":$pending,
                     CArg<"::llvm::ArrayRef<int64_t>", "{}">:$open,
                     CArg<"int64_t", "0">:$priority,
                     CArg<"::llvm::ArrayRef<int64_t>", "{}">:$parts)>
  ];
  let skipDefaultBuilders = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getDims().size(); }
    /// The axes that split dimension `dim`, major first.
    ::llvm::SmallVector<::llvm::StringRef> axesOf(int64_t dim) const;
    /// The axes over which the value is a pending sum.
    ::llvm::SmallVector<::llvm::StringRef> pendingAxes() const;
    /// The number of parts dimension `dim` is made of (1: plain).
    int64_t partsOf(int64_t dim) const {
      return getParts().empty() ? 1 : getParts()[dim];
    }
    /// The replicated sharding of a rank-`rank` tensor.
    static ShardingAttr replicated(::mlir::MLIRContext *context, int64_t rank);
    bool isReplicated() const;
  }];
}

def Tfm_HeadTailAttr : Tfm_Attr<"HeadTail", "head_tail"> {
  let summary = "a sequence in head-tail order over the ranks of a context-parallel axis";
  let description = [{
    The sequence of `length` positions is permuted so that each of `ranks`
    equal blocks is a head chunk from its front followed by a tail chunk from
    its back, block 0 holding the first head and the last tail: split over
    a cp axis of `ranks`, every rank gets as much causal attention work
    (HeadTailOrder in pmlir/Support/Layout.h). On `tfm.arange` it gives the
    positions of the permuted sequence; on causal attention it masks by
    those positions. `pmlir-head-tail-sequence` sets it.

    ```mlir
    %pos = tfm.arange start = 0 head_tail <ranks = 2, length = 16>
        : tensor<16xi64>
    ```
  }];
  let parameters = (ins "int64_t":$ranks, "int64_t":$length);
  let assemblyFormat = "`<` `ranks` `=` $ranks `,` `length` `=` $length `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    ::pmlir::HeadTailOrder order() const { return {getRanks(), getLength()}; }
  }];
}

#endif // PMLIR_DIALECT_TFM_IR_TFMATTRS_TD
