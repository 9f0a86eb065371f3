//===- Mesh.cpp - Named device meshes and their process groups -----------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/Mesh.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

using namespace pmlir;

namespace {

std::vector<std::string> splitList(const std::string &text) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, ','))
    parts.push_back(part);
  if (!text.empty() && text.back() == ',')
    parts.push_back("");
  return parts;
}

bool isAxisName(const std::string &name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

} // namespace

std::optional<Mesh> Mesh::parse(const std::string &spec, const std::string &rankOrder,
                                std::string &error) {
  if (spec.empty()) {
    error = "empty mesh: expected axes like 'tp=2,dp=2'";
    return std::nullopt;
  }
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  for (const std::string &item : splitList(spec)) {
    size_t eq = item.find('=');
    std::string name = item.substr(0, eq);
    if (eq == std::string::npos || !isAxisName(name)) {
      error = "mesh axis '" + item + "': expected <name>=<size> with a name of letters, digits and '_'";
      return std::nullopt;
    }
    std::string sizeText = item.substr(eq + 1);
    char *end = nullptr;
    long long size = std::strtoll(sizeText.c_str(), &end, 10);
    if (sizeText.empty() || *end != '\0' || size < 1) {
      error = "mesh axis '" + name + "': size '" + sizeText + "' is not a positive integer";
      return std::nullopt;
    }
    if (size > kMaxMeshDevices) {
      error = "mesh axis '" + name + "': size " + sizeText + " is more than a mesh's 2^20 ranks";
      return std::nullopt;
    }
    names.push_back(name);
    sizes.push_back(size);
  }
  return create(names, sizes, rankOrder.empty() ? std::vector<std::string>{} : splitList(rankOrder),
                error);
}

std::optional<Mesh> Mesh::create(const std::vector<std::string> &names,
                                 const std::vector<int64_t> &sizes,
                                 const std::vector<std::string> &rankOrder, std::string &error) {
  Mesh mesh;
  std::string spec;
  for (size_t i = 0; i < names.size() && i < sizes.size(); ++i)
    spec += (spec.empty() ? "" : ",") + names[i] + "=" + std::to_string(sizes[i]);
  if (names.empty() || names.size() != sizes.size()) {
    error = "empty mesh: expected axes like 'tp=2,dp=2'";
    return std::nullopt;
  }
  int64_t total = 1;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string &name = names[i];
    int64_t size = sizes[i];
    if (!isAxisName(name)) {
      error = "mesh axis '" + name + "': expected a name of letters, digits and '_'";
      return std::nullopt;
    }
    if (size < 1) {
      error =
          "mesh axis '" + name + "': size '" + std::to_string(size) + "' is not a positive integer";
      return std::nullopt;
    }
    if (size > kMaxMeshDevices) {
      error = "mesh axis '" + name + "': size " + std::to_string(size) +
              " is more than a mesh's 2^20 ranks";
      return std::nullopt;
    }
    if (mesh.axisIndex(name) >= 0) {
      error = "mesh axis '" + name + "' appears twice";
      return std::nullopt;
    }
    total *= size;
    if (total > kMaxMeshDevices) {
      error = "mesh '" + spec + "' has more than 2^20 ranks";
      return std::nullopt;
    }
    mesh.names.push_back(name);
    mesh.sizes.push_back(size);
  }

  if (!rankOrder.empty()) {
    std::string orderText;
    for (const std::string &name : rankOrder)
      orderText += (orderText.empty() ? "" : ",") + name;
    for (const std::string &name : rankOrder) {
      int axis = mesh.axisIndex(name);
      if (axis < 0) {
        error = "rank order names '" + name + "', which is not an axis of the mesh '" + spec + "'";
        return std::nullopt;
      }
      if (std::find(mesh.order.begin(), mesh.order.end(), axis) != mesh.order.end()) {
        error = "rank order names '" + name + "' twice";
        return std::nullopt;
      }
      mesh.order.push_back(axis);
    }
    if (mesh.order.size() != mesh.names.size()) {
      error = "rank order '" + orderText + "' must name every axis of the mesh '" + spec + "'";
      return std::nullopt;
    }
  } else {
    mesh.order = defaultRankOrder(mesh.names);
    for (size_t i = 0; i < mesh.names.size(); ++i)
      if (std::find(mesh.order.begin(), mesh.order.end(), int(i)) == mesh.order.end()) {
        error = "mesh axis '" + mesh.names[i] +
                "' has no default place in the rank order (tp, cp, ep, dp, pp); "
                "give one with --rank-order";
        return std::nullopt;
      }
  }

  mesh.strides.assign(mesh.names.size(), 0);
  int64_t stride = 1;
  for (int axis : mesh.order) {
    mesh.strides[axis] = stride;
    stride *= mesh.sizes[axis];
  }
  return mesh;
}

const std::vector<std::string> &Mesh::knownAxisNames() {
  // Megatron's tp-cp-ep-dp-pp: tensor parallel ranks are neighbours.
  static const std::vector<std::string> megatron = {"tp", "cp", "ep", "dp", "pp"};
  return megatron;
}

std::vector<int> Mesh::defaultRankOrder(const std::vector<std::string> &names) {
  std::vector<int> order;
  for (const std::string &name : knownAxisNames())
    if (auto it = std::find(names.begin(), names.end(), name); it != names.end())
      order.push_back(static_cast<int>(it - names.begin()));
  return order;
}

bool Mesh::hasDefaultRankOrder() const { return order == defaultRankOrder(names); }

std::string Mesh::spec() const {
  std::string text;
  for (size_t i = 0; i < names.size(); ++i)
    text += (text.empty() ? "" : ",") + names[i] + "=" + std::to_string(sizes[i]);
  return text;
}

std::string Mesh::rankOrderSpec() const {
  if (hasDefaultRankOrder())
    return "";
  std::string text;
  for (int axis : order)
    text += (text.empty() ? "" : ",") + names[axis];
  return text;
}

int64_t Mesh::numRanks() const {
  int64_t n = 1;
  for (int64_t s : sizes)
    n *= s;
  return n;
}

std::optional<AxisName> AxisName::split(std::string_view name) {
  AxisName parts;
  size_t open = name.find(":(");
  parts.axis = name.substr(0, open);
  if (open == std::string_view::npos)
    return parts;
  // "(p)s" with positive decimal p and s.
  std::string_view rest = name.substr(open + 2);
  auto number = [&](int64_t &value) {
    size_t digits = 0;
    value = 0;
    while (digits < rest.size() && digits < 12 &&
           std::isdigit(static_cast<unsigned char>(rest[digits])))
      value = value * 10 + (rest[digits++] - '0');
    rest.remove_prefix(digits);
    return digits > 0 && value > 0;
  };
  if (!number(parts.pre) || rest.empty() || rest.front() != ')')
    return std::nullopt;
  rest.remove_prefix(1);
  if (!number(parts.size) || !rest.empty())
    return std::nullopt;
  return parts;
}

std::optional<SubAxis> AxisName::resolve(int64_t index, int64_t axisSize) const {
  if (pre == 0)
    return SubAxis{index, 1, axisSize};
  if (pre > axisSize || size > axisSize || axisSize % (pre * size) != 0)
    return std::nullopt;
  return SubAxis{index, pre, size};
}

std::string pmlir::subAxisName(std::string_view axis, int64_t axisSize, int64_t pre, int64_t size) {
  if (pre == 1 && size == axisSize)
    return std::string(axis);
  return std::string(axis) + ":(" + std::to_string(pre) + ")" + std::to_string(size);
}

std::optional<SubAxis> Mesh::subAxis(std::string_view name) const {
  std::optional<AxisName> parts = AxisName::split(name);
  int index = parts ? axisIndex(parts->axis) : -1;
  if (index < 0)
    return std::nullopt;
  return parts->resolve(index, sizes[index]);
}

int64_t Mesh::blockIndex(const std::vector<std::string> &axes,
                         const std::vector<int64_t> &coords) const {
  int64_t block = 0;
  for (const std::string &name : axes) {
    std::optional<SubAxis> sub = subAxis(name);
    if (!sub)
      return -1;
    block = block * sub->size + sub->coordinate(coords[sub->index], sizes[sub->index]);
  }
  return block;
}

int Mesh::axisIndex(std::string_view name) const {
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : int(it - names.begin());
}

std::vector<int64_t> Mesh::coordinates(int64_t rank) const {
  std::vector<int64_t> coords(names.size());
  for (size_t a = 0; a < names.size(); ++a)
    coords[a] = (rank / strides[a]) % sizes[a];
  return coords;
}

int64_t Mesh::rankOf(const std::vector<int64_t> &coords) const {
  int64_t rank = 0;
  for (size_t a = 0; a < names.size(); ++a)
    rank += coords[a] * strides[a];
  return rank;
}

std::optional<SubAxis> Mesh::axisOfCode(int64_t code) const {
  SubAxis part = SubAxis::fromCode(code);
  if (code < 0 || part.index >= int64_t(names.size()))
    return std::nullopt;
  int64_t size = sizes[part.index];
  if (part.pre == 0 && part.size == 0)
    return wholeAxis(int(part.index));
  if (part.pre < 1 || part.size < 1 || size % (part.pre * part.size) != 0)
    return std::nullopt;
  return part;
}

std::string Mesh::nameOf(const SubAxis &part) const {
  return subAxisName(names[part.index], sizes[part.index], part.pre, part.size);
}

std::optional<std::vector<SubAxis>> pmlir::cutAxes(const std::vector<std::string> &axisNames,
                                                   const std::vector<int64_t> &axisSizes,
                                                   const std::vector<SubAxis> &named,
                                                   std::string &error) {
  std::vector<SubAxis> cut;
  for (int64_t axis = 0; axis < int64_t(axisSizes.size()); ++axis) {
    // A part's ends are positions counted in devices above it: it spans
    // [pre, pre * size). Every end must divide the next for the parts
    // between them to exist.
    std::vector<int64_t> ends = {1, axisSizes[axis]};
    for (const SubAxis &part : named)
      if (part.index == axis) {
        ends.push_back(part.pre);
        ends.push_back(part.pre * part.size);
      }
    std::sort(ends.begin(), ends.end());
    ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
    if (ends.size() == 1) { // an axis of size 1 is one part too
      cut.push_back({axis, 1, 1});
      continue;
    }
    for (size_t i = 1; i < ends.size(); ++i) {
      if (ends[i] % ends[i - 1] != 0) {
        auto endingAt = [&](int64_t end) {
          for (const SubAxis &part : named)
            if (part.index == axis && (part.pre == end || part.pre * part.size == end))
              return subAxisName(axisNames[axis], axisSizes[axis], part.pre, part.size);
          return std::string();
        };
        error = "the sub-axes '" + endingAt(ends[i - 1]) + "' and '" + endingAt(ends[i]) +
                "' end inside each other, so no grid of parts holds both";
        return std::nullopt;
      }
      cut.push_back({axis, ends[i - 1], ends[i] / ends[i - 1]});
    }
  }
  return cut;
}

std::vector<int> pmlir::partsIn(const std::vector<SubAxis> &cut, const SubAxis &part) {
  std::vector<int> runs;
  int64_t end = part.pre * part.size;
  for (size_t i = 0; i < cut.size(); ++i)
    if (cut[i].index == part.index && cut[i].pre >= part.pre && cut[i].pre * cut[i].size <= end)
      runs.push_back(int(i));
  int64_t covered = 1;
  for (int i : runs)
    covered *= cut[i].size;
  if (runs.empty() || cut[runs.front()].pre != part.pre || covered != part.size)
    return {};
  return runs;
}

std::vector<int64_t> Mesh::group(int64_t rank, const std::vector<SubAxis> &axes) const {
  std::vector<int64_t> coords = coordinates(rank);
  int64_t count = 1;
  for (const SubAxis &part : axes)
    count *= part.size;
  std::vector<int64_t> ranks(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t rest = i;
    for (size_t k = axes.size(); k-- > 0;) {
      const SubAxis &part = axes[k];
      int64_t axisSize = sizes[part.index], stride = part.stride(axisSize);
      int64_t &c = coords[part.index];
      c += (rest % part.size - part.coordinate(c, axisSize)) * stride;
      rest /= part.size;
    }
    ranks[i] = rankOf(coords);
  }
  return ranks;
}

int64_t Mesh::indexInGroup(int64_t rank, const std::vector<SubAxis> &axes) const {
  std::vector<int64_t> coords = coordinates(rank);
  int64_t index = 0;
  for (const SubAxis &part : axes)
    index = index * part.size + part.coordinate(coords[part.index], sizes[part.index]);
  return index;
}

int64_t Mesh::groupColor(int64_t rank, const std::vector<SubAxis> &axes) const {
  std::vector<int64_t> coords = coordinates(rank);
  for (const SubAxis &part : axes) {
    int64_t axisSize = sizes[part.index];
    coords[part.index] -= part.coordinate(coords[part.index], axisSize) * part.stride(axisSize);
  }
  return rankOf(coords);
}

std::string Mesh::describeGroups() const {
  std::ostringstream out;
  for (int axis : order) {
    std::vector<int64_t> seen;
    for (int64_t rank = 0; rank < numRanks(); ++rank) {
      int64_t color = groupColor(rank, {wholeAxis(axis)});
      if (std::find(seen.begin(), seen.end(), color) != seen.end())
        continue;
      seen.push_back(color);
      out << names[axis] << ":";
      for (int64_t member : group(rank, {wholeAxis(axis)}))
        out << " " << member;
      out << "\n";
    }
  }
  return out.str();
}
