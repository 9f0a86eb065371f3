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
    the partitioned program (`shard.grid` axis i is the mesh's axis i, and
    `pmlir-run --mesh` must list the same axes and sizes).

    ```mlir
    module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 4>} { ... }
    ```
  }];
  let parameters = (ins ArrayRefParameter<"::mlir::StringAttr", "axis names">:$axes,
                        ArrayRefParameter<"int64_t", "axis sizes">:$sizes);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Index of axis `name`, or -1.
    int64_t axisIndex(::llvm::StringRef name) const;
    /// Size of axis `name` (1 when the mesh has no such axis).
    int64_t axisSize(::llvm::StringRef name) const;
    int64_t numDevices() const;
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

    ```mlir
    #tfm.sharding<[[], ["tp"]]>                    // column-parallel weight
    #tfm.sharding<[["dp"], [], []], pending = ["tp"]>   // row-parallel output
    #tfm.sharding<[[], ["tp"]], open = [0], priority = 1>
    ```
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims,
                        OptionalParameter<"::mlir::ArrayAttr">:$pending,
                        OptionalArrayRefParameter<"int64_t">:$open,
                        DefaultValuedParameter<"int64_t", "0">:$priority);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let builders = [
    AttrBuilder<(ins "::llvm::ArrayRef<::llvm::SmallVector<::llvm::StringRef>>":$dims,
                     "::llvm::ArrayRef<::llvm::StringRef>":$pending,
                     CArg<"::llvm::ArrayRef<int64_t>", "{}">:$open,
                     CArg<"int64_t", "0">:$priority)>
  ];
  let skipDefaultBuilders = 1;
  let extraClassDeclaration = [{
    int64_t getRank() const { return getDims().size(); }
    /// The axes that split dimension `dim`, major first.
    ::llvm::SmallVector<::llvm::StringRef> axesOf(int64_t dim) const;
    /// The axes over which the value is a pending sum.
    ::llvm::SmallVector<::llvm::StringRef> pendingAxes() const;
    /// The replicated sharding of a rank-`rank` tensor.
    static ShardingAttr replicated(::mlir::MLIRContext *context, int64_t rank);
    bool isReplicated() const;
  }];
}

#endif // PMLIR_DIALECT_TFM_IR_TFMATTRS_TD
