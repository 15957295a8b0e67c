#include "kagent/compile/cubin.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <stdexcept>

namespace kagent {

namespace {

// .nv.info attribute ids (from the CUDA ELF format as cuobjdump prints it).
constexpr uint8_t kMaxThreads = 0x05;  // u32 x, y, z from __launch_bounds__ / .maxntid
constexpr uint8_t kFrameSize = 0x11;   // u32 symbol, u32 bytes
constexpr uint8_t kKparamInfo = 0x17;  // u32 index, u16 ordinal, u16 offset, u32 flags (size << 18)
constexpr uint8_t kRegCount = 0x2f;    // u32 symbol, u32 registers
constexpr uint8_t kFmtSval = 0x04;     // entries are 4 bytes, SVAL entries 4 + u16 length
constexpr uint8_t kStoCudaEntry = 0x10;

class Reader {
 public:
  explicit Reader(std::string_view image) : d_(image) {}
  template <typename T>
  T at(uint64_t off) const {
    if (off > d_.size() || sizeof(T) > d_.size() - off) throw std::runtime_error("cubin: truncated image");
    T v;
    std::memcpy(&v, d_.data() + off, sizeof(T));
    return v;
  }
  std::string cstr(uint64_t off) const {
    if (off >= d_.size()) throw std::runtime_error("cubin: string offset out of range");
    size_t end = d_.find('\0', off);
    if (end == std::string_view::npos) throw std::runtime_error("cubin: unterminated string");
    return std::string(d_.substr(off, end - off));
  }
  size_t size() const { return d_.size(); }

 private:
  std::string_view d_;
};

struct Section {
  std::string name;
  uint32_t type = 0;
  uint64_t offset = 0, size = 0;
  uint32_t link = 0, info = 0;
};

struct Attr {
  uint8_t id;
  uint64_t value_off;  // payload offset in the image (SVAL only)
  uint16_t value_len;
};

// Walks the attribute records of one .nv.info section.
std::vector<Attr> read_attrs(const Reader& r, const Section& s) {
  std::vector<Attr> out;
  uint64_t p = s.offset, end = s.offset + s.size;
  while (p + 4 <= end) {
    auto fmt = r.at<uint8_t>(p);
    auto id = r.at<uint8_t>(p + 1);
    if (fmt == kFmtSval) {
      auto len = r.at<uint16_t>(p + 2);
      if (p + 4 + len > end) throw std::runtime_error("cubin: attribute overruns .nv.info");
      out.push_back({id, p + 4, len});
      p += 4 + len;
    } else {
      p += 4;  // NVAL, BVAL and HVAL records all occupy 4 bytes
    }
  }
  return out;
}

}  // namespace

std::vector<CubinKernel> read_cubin_kernels(std::string_view image) {
  Reader r(image);
  if (image.size() < 64 || image.substr(0, 4) != "\x7f" "ELF" || r.at<uint8_t>(4) != 2)
    throw std::runtime_error("cubin: not a 64-bit ELF image");
  const auto shoff = r.at<uint64_t>(0x28);
  const auto shentsize = r.at<uint16_t>(0x3a);
  const auto shnum = r.at<uint16_t>(0x3c);
  const auto shstrndx = r.at<uint16_t>(0x3e);
  if (shentsize < 64 || shstrndx >= shnum) throw std::runtime_error("cubin: bad section table");

  std::vector<Section> secs(shnum);
  std::vector<uint32_t> name_offs(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    uint64_t h = shoff + uint64_t(i) * shentsize;
    name_offs[i] = r.at<uint32_t>(h);
    secs[i].type = r.at<uint32_t>(h + 4);
    secs[i].offset = r.at<uint64_t>(h + 24);
    secs[i].size = r.at<uint64_t>(h + 32);
    secs[i].link = r.at<uint32_t>(h + 40);
    secs[i].info = r.at<uint32_t>(h + 44);
  }
  for (uint16_t i = 0; i < shnum; ++i) secs[i].name = r.cstr(secs[shstrndx].offset + name_offs[i]);

  // Entry kernels: global FUNC symbols flagged STO_CUDA_ENTRY. Keep symbol indices, since the
  // module-wide .nv.info refers to kernels by symbol index.
  std::vector<CubinKernel> kernels;
  std::map<uint32_t, size_t> by_symbol;
  for (const auto& s : secs) {
    if (s.type != 2 /* SHT_SYMTAB */) continue;
    if (s.link >= secs.size()) throw std::runtime_error("cubin: bad symbol string table");
    const auto& strtab = secs[s.link];
    for (uint64_t j = 0; j * 24 + 24 <= s.size; ++j) {
      uint64_t e = s.offset + j * 24;
      auto st_name = r.at<uint32_t>(e);
      auto st_info = r.at<uint8_t>(e + 4);
      auto st_other = r.at<uint8_t>(e + 5);
      if ((st_info & 0xf) != 2 /* STT_FUNC */ || (st_other & kStoCudaEntry) == 0) continue;
      CubinKernel k;
      k.name = r.cstr(strtab.offset + st_name);
      by_symbol[static_cast<uint32_t>(j)] = kernels.size();
      kernels.push_back(std::move(k));
    }
  }
  auto find = [&](const std::string& name) -> CubinKernel* {
    for (auto& k : kernels)
      if (k.name == name) return &k;
    return nullptr;
  };

  for (const auto& s : secs) {
    if (s.name == ".nv.info") {
      for (const auto& a : read_attrs(r, s)) {
        if ((a.id != kRegCount && a.id != kFrameSize) || a.value_len < 8) continue;
        auto sym = r.at<uint32_t>(a.value_off);
        auto val = r.at<uint32_t>(a.value_off + 4);
        auto it = by_symbol.find(sym);
        if (it == by_symbol.end()) continue;
        if (a.id == kRegCount) kernels[it->second].registers = static_cast<int>(val);
        else kernels[it->second].frame_size = val;
      }
    } else if (s.name.rfind(".nv.info.", 0) == 0) {
      CubinKernel* k = find(s.name.substr(9));
      if (k == nullptr) continue;
      std::vector<std::pair<uint16_t, uint32_t>> params;  // ordinal, size
      for (const auto& a : read_attrs(r, s)) {
        if (a.id == kMaxThreads && a.value_len >= 12) {
          k->max_threads = static_cast<int>(r.at<uint32_t>(a.value_off) * r.at<uint32_t>(a.value_off + 4) *
                                            r.at<uint32_t>(a.value_off + 8));
        } else if (a.id == kKparamInfo && a.value_len >= 12) {
          auto ordinal = r.at<uint16_t>(a.value_off + 4);
          auto flags = r.at<uint32_t>(a.value_off + 8);
          params.emplace_back(ordinal, (flags >> 18) & 0x3fff);
        }
      }
      std::sort(params.begin(), params.end());
      k->param_sizes.clear();
      for (const auto& p : params) k->param_sizes.push_back(p.second);
    } else if (s.name.rfind(".nv.shared.", 0) == 0) {
      if (CubinKernel* k = find(s.name.substr(11))) k->shared_section = static_cast<int64_t>(s.size);
    }
  }
  std::sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return kernels;
}

int max_threads_for(int registers, int launch_bounds) {
  // 64K 32-bit registers per block; each warp's registers are allocated in units of 256.
  constexpr int kRegsPerBlock = 65536, kAllocUnit = 256, kWarp = 32, kMaxBlock = 1024;
  int limit = kMaxBlock;
  if (registers > 0) {
    int per_warp = ((registers * kWarp + kAllocUnit - 1) / kAllocUnit) * kAllocUnit;
    limit = std::min(limit, (kRegsPerBlock / per_warp) * kWarp);
  }
  if (launch_bounds > 0) limit = std::min(limit, launch_bounds);
  return limit;
}

}  // namespace kagent
