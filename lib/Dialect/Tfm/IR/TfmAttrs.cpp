//===- TfmAttrs.cpp - tfm mesh and sharding attributes --------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Support/Mesh.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/ConvertUTF.h"

using namespace mlir;
using namespace pmlir::tfm;

#define GET_ATTRDEF_CLASSES
#include "pmlir/Dialect/Tfm/IR/TfmAttrs.cpp.inc"

void TfmDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "pmlir/Dialect/Tfm/IR/TfmAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// MeshAttr: #tfm.mesh<dp = 2, tp = 4>
//===----------------------------------------------------------------------===//

namespace {

bool isUtf8(StringRef text) {
  const auto *begin = reinterpret_cast<const llvm::UTF8 *>(text.begin());
  return llvm::isLegalUTF8String(&begin, reinterpret_cast<const llvm::UTF8 *>(text.end()));
}

/// `order` (axis names, fastest first), or nothing where it is the
/// default order of `axes`: one attribute for one mesh.
SmallVector<StringAttr> normalRankOrder(ArrayRef<StringAttr> axes, ArrayRef<StringAttr> order) {
  std::vector<std::string> names;
  for (StringAttr axis : axes)
    names.push_back(axis.getValue().str());
  std::vector<int> defaults = pmlir::Mesh::defaultRankOrder(names);
  bool isDefault = defaults.size() == order.size();
  for (size_t i = 0; isDefault && i < order.size(); ++i)
    isDefault = axes[defaults[i]] == order[i];
  return isDefault ? SmallVector<StringAttr>() : SmallVector<StringAttr>(order);
}

} // namespace

Attribute MeshAttr::parse(AsmParser &parser, Type) {
  SmallVector<StringAttr> axes, order;
  SmallVector<int64_t> sizes;
  bool orderSeen = false;
  auto parseAxis = [&]() -> ParseResult {
    std::string name;
    int64_t size = 0;
    if (parser.parseKeywordOrString(&name) || parser.parseEqual())
      return failure();
    // `rank_order = [tp, dp]`, after the axes.
    if (name == "rank_order" && succeeded(parser.parseOptionalLSquare())) {
      if (orderSeen)
        return parser.emitError(parser.getCurrentLocation(), "rank_order is given twice");
      orderSeen = true;
      return parser.parseCommaSeparatedList([&]() -> ParseResult {
        std::string axis;
        if (parser.parseKeywordOrString(&axis))
          return failure();
        order.push_back(parser.getBuilder().getStringAttr(axis));
        return success();
      })
                 ? failure()
                 : parser.parseRSquare();
    }
    if (orderSeen)
      return parser.emitError(parser.getCurrentLocation(), "mesh axes come before rank_order");
    if (parser.parseInteger(size))
      return failure();
    axes.push_back(parser.getBuilder().getStringAttr(name));
    sizes.push_back(size);
    return success();
  };
  if (parser.parseCommaSeparatedList(AsmParser::Delimiter::LessGreater, parseAxis))
    return {};
  return parser.getChecked<MeshAttr>(parser.getContext(), axes, sizes,
                                     normalRankOrder(axes, order));
}

void MeshAttr::print(AsmPrinter &printer) const {
  printer << "<";
  llvm::interleaveComma(llvm::zip(getAxes(), getSizes()), printer, [&](auto axis) {
    printer.printKeywordOrString(std::get<0>(axis).getValue());
    printer << " = " << std::get<1>(axis);
  });
  if (!getRankOrder().empty()) {
    printer << ", rank_order = [";
    llvm::interleaveComma(getRankOrder(), printer,
                          [&](StringAttr axis) { printer.printKeywordOrString(axis.getValue()); });
    printer << "]";
  }
  printer << ">";
}

MeshAttr MeshAttr::get(MLIRContext *context, const pmlir::Mesh &mesh) {
  SmallVector<StringAttr> axes, order;
  for (const std::string &name : mesh.axisNames())
    axes.push_back(StringAttr::get(context, name));
  if (!mesh.hasDefaultRankOrder())
    for (int axis : mesh.rankOrder())
      order.push_back(axes[axis]);
  return get(context, axes, mesh.axisSizes(), order);
}

std::optional<pmlir::Mesh> MeshAttr::toMesh(std::string &error) const {
  std::vector<std::string> names, order;
  for (StringAttr axis : getAxes())
    names.push_back(axis.getValue().str());
  for (StringAttr axis : getRankOrder())
    order.push_back(axis.getValue().str());
  return pmlir::Mesh::create(names, std::vector<int64_t>(getSizes().begin(), getSizes().end()),
                             order, error);
}

LogicalResult HeadTailAttr::verify(function_ref<InFlightDiagnostic()> emitError, int64_t ranks,
                                   int64_t length) {
  if (ranks < 1 || ranks > pmlir::kMaxMeshDevices)
    return emitError() << "head-tail order over " << ranks << " ranks; at least 1 is needed";
  if (length < 2 * ranks || length % ranks != 0)
    return emitError() << "head-tail order of a sequence of " << length << " over " << ranks
                       << " ranks: it needs equal blocks of at least 2 positions (a head and a "
                          "tail chunk)";
  return success();
}

LogicalResult MeshAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               ArrayRef<StringAttr> axes, ArrayRef<int64_t> sizes,
                               ArrayRef<StringAttr> rankOrder) {
  if (axes.empty())
    return emitError() << "a mesh needs at least one axis";
  llvm::StringSet<> seen;
  for (auto [name, size] : llvm::zip(axes, sizes)) {
    if (name.getValue().empty())
      return emitError() << "mesh axis names must not be empty";
    // Axis names reach the command line, diagnostics and the JSON reports
    // as text.
    if (!isUtf8(name.getValue()))
      return emitError() << "mesh axis " << seen.size() << "'s name is not UTF-8 text";
    if (!seen.insert(name.getValue()).second)
      return emitError() << "mesh axis '" << name.getValue() << "' is listed twice";
    if (size < 1)
      return emitError() << "mesh axis '" << name.getValue() << "' has size " << size
                         << "; sizes must be at least 1";
  }
  // The device count is a product of sizes: bounded before it can overflow.
  int64_t devices = 1;
  for (int64_t size : sizes)
    if (__builtin_mul_overflow(devices, size, &devices) || devices > pmlir::kMaxMeshDevices)
      return emitError() << "a mesh of more than " << pmlir::kMaxMeshDevices
                         << " devices (2^20) is not supported";
  if (!rankOrder.empty()) {
    llvm::StringSet<> ordered;
    for (StringAttr name : rankOrder) {
      if (!seen.contains(name.getValue()))
        return emitError() << "mesh rank_order names '" << name.getValue()
                           << "', which is not an axis of the mesh";
      if (!ordered.insert(name.getValue()).second)
        return emitError() << "mesh rank_order names '" << name.getValue() << "' twice";
    }
    if (ordered.size() != seen.size())
      return emitError() << "mesh rank_order must name every axis of the mesh";
  }
  return success();
}

int64_t MeshAttr::axisIndex(StringRef name) const {
  for (auto [i, axis] : llvm::enumerate(getAxes()))
    if (axis.getValue() == name)
      return i;
  return -1;
}

int64_t MeshAttr::axisSize(StringRef name) const {
  std::optional<SubAxis> sub = subAxis(name);
  return sub ? sub->size : 1;
}

std::optional<MeshAttr::SubAxis> MeshAttr::subAxis(StringRef name) const {
  std::optional<pmlir::AxisName> parts = pmlir::AxisName::split(name);
  int64_t index = parts ? axisIndex(parts->axis) : -1;
  if (index < 0)
    return std::nullopt;
  return parts->resolve(index, getSizes()[index]);
}

StringRef MeshAttr::subAxisName(int64_t axis, int64_t pre, int64_t size) const {
  std::string name = pmlir::subAxisName(getAxes()[axis].getValue(), getSizes()[axis], pre, size);
  return StringAttr::get(getContext(), name).getValue();
}

bool MeshAttr::overlap(StringRef a, StringRef b) const {
  std::optional<SubAxis> x = subAxis(a), y = subAxis(b);
  if (!x || !y)
    return a == b;
  return x->overlaps(*y);
}

SmallVector<StringRef> MeshAttr::mergeSubAxes(ArrayRef<StringRef> axes) const {
  SmallVector<StringRef> merged;
  for (StringRef a : axes) {
    std::optional<SubAxis> next = subAxis(a);
    std::optional<SubAxis> last = merged.empty() ? std::nullopt : subAxis(merged.back());
    if (next && last && next->index == last->index && next->pre == last->pre * last->size) {
      merged.back() = subAxisName(last->index, last->pre, last->size * next->size);
      continue;
    }
    merged.push_back(a);
  }
  return merged;
}

int64_t MeshAttr::numDevices() const {
  int64_t n = 1;
  for (int64_t s : getSizes())
    n *= s;
  return n;
}

//===----------------------------------------------------------------------===//
// ShardingAttr: #tfm.sharding<[["dp"], [], ["tp"]], pending = ["tp"]>
//===----------------------------------------------------------------------===//

ShardingAttr ShardingAttr::get(MLIRContext *context, ArrayRef<SmallVector<StringRef>> dims,
                               ArrayRef<StringRef> pending, ArrayRef<int64_t> open,
                               int64_t priority, ArrayRef<int64_t> parts) {
  Builder b(context);
  SmallVector<Attribute> dimAttrs;
  for (const SmallVector<StringRef> &axes : dims)
    dimAttrs.push_back(b.getStrArrayAttr(axes));
  // Parts of 1 everywhere is no parts: one spelling per sharding.
  if (llvm::all_of(parts, [](int64_t p) { return p == 1; }))
    parts = {};
  return Base::get(context, b.getArrayAttr(dimAttrs),
                   pending.empty() ? ArrayAttr() : b.getStrArrayAttr(pending), open, priority,
                   parts);
}

/// #tfm.sharding<DIMS [, pending = [...]] [, open = [...]] [, priority = N]
///               [, parts = [...]]>
Attribute ShardingAttr::parse(AsmParser &parser, Type) {
  ArrayAttr dims, pending;
  SmallVector<int64_t> open, parts;
  int64_t priority = 0;
  if (parser.parseLess() || parser.parseAttribute(dims))
    return {};
  while (succeeded(parser.parseOptionalComma())) {
    StringRef key;
    if (parser.parseKeyword(&key) || parser.parseEqual())
      return {};
    if (key == "pending") {
      if (parser.parseAttribute(pending))
        return {};
    } else if (key == "open") {
      auto parseDim = [&]() { return parser.parseInteger(open.emplace_back()); };
      if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parseDim))
        return {};
    } else if (key == "priority") {
      if (parser.parseInteger(priority))
        return {};
    } else if (key == "parts") {
      auto parsePart = [&]() { return parser.parseInteger(parts.emplace_back()); };
      if (parser.parseCommaSeparatedList(AsmParser::Delimiter::Square, parsePart))
        return {};
    } else {
      parser.emitError(parser.getCurrentLocation())
          << "expected 'pending', 'open', 'priority' or 'parts', got '" << key << "'";
      return {};
    }
  }
  if (parser.parseGreater())
    return {};
  if (llvm::all_of(parts, [](int64_t p) { return p == 1; }))
    parts.clear();
  return parser.getChecked<ShardingAttr>(parser.getContext(), dims, pending, open, priority, parts);
}

void ShardingAttr::print(AsmPrinter &printer) const {
  printer << "<" << getDims();
  if (getPending())
    printer << ", pending = " << getPending();
  if (!getOpen().empty()) {
    printer << ", open = [";
    llvm::interleaveComma(getOpen(), printer);
    printer << "]";
  }
  if (getPriority() != 0)
    printer << ", priority = " << getPriority();
  if (!getParts().empty()) {
    printer << ", parts = [";
    llvm::interleaveComma(getParts(), printer);
    printer << "]";
  }
  printer << ">";
}

ShardingAttr ShardingAttr::replicated(MLIRContext *context, int64_t rank) {
  return get(context, SmallVector<SmallVector<StringRef>>(rank), {});
}

LogicalResult ShardingAttr::verify(function_ref<InFlightDiagnostic()> emitError, ArrayAttr dims,
                                   ArrayAttr pending, ArrayRef<int64_t> open, int64_t priority,
                                   ArrayRef<int64_t> parts) {
  if (!parts.empty() && parts.size() != dims.size())
    return emitError() << "has " << parts.size() << " part counts for " << dims.size()
                       << " dimensions";
  for (auto [d, n] : llvm::enumerate(parts))
    if (n < 1)
      return emitError() << "dimension " << d << " has " << n << " parts; a count is at least 1";
  for (auto [i, d] : llvm::enumerate(open))
    if (d < 0 || d >= static_cast<int64_t>(dims.size()) || llvm::is_contained(open.take_front(i), d))
      return emitError() << "open dimension " << d << " is not one of dimensions 0 to "
                         << static_cast<int64_t>(dims.size()) - 1 << " (once each)";
  if (priority < 0)
    return emitError() << "priority " << priority << " is negative";
  llvm::StringSet<> seen;
  auto checkAxes = [&](Attribute list, StringRef where) -> LogicalResult {
    auto axes = dyn_cast<ArrayAttr>(list);
    if (!axes)
      return emitError() << where << " must be a list of mesh axis names, got " << list;
    for (Attribute a : axes) {
      auto name = dyn_cast<StringAttr>(a);
      if (!name)
        return emitError() << where << " must list mesh axis names (strings), got " << a;
      if (!seen.insert(name.getValue()).second)
        return emitError() << "mesh axis '" << name.getValue()
                           << "' is used twice in one sharding";
    }
    return success();
  };
  for (auto [d, dim] : llvm::enumerate(dims))
    if (failed(checkAxes(dim, "dimension " + std::to_string(d))))
      return failure();
  if (pending && failed(checkAxes(pending, "pending")))
    return failure();
  return success();
}

SmallVector<StringRef> ShardingAttr::axesOf(int64_t dim) const {
  SmallVector<StringRef> axes;
  for (Attribute a : cast<ArrayAttr>(getDims()[dim]))
    axes.push_back(cast<StringAttr>(a).getValue());
  return axes;
}

SmallVector<StringRef> ShardingAttr::pendingAxes() const {
  SmallVector<StringRef> axes;
  if (getPending())
    for (Attribute a : getPending())
      axes.push_back(cast<StringAttr>(a).getValue());
  return axes;
}

bool ShardingAttr::isReplicated() const {
  if (getPending() && !getPending().empty())
    return false;
  for (Attribute dim : getDims())
    if (!cast<ArrayAttr>(dim).empty())
      return false;
  return true;
}
