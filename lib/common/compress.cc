#include "lib/common/compress.h"

#include <zlib.h>

namespace codl {

Result<std::string> ZlibCompress(std::string_view data) {
  uLongf size = compressBound(static_cast<uLong>(data.size()));
  std::string out(size, '\0');
  const int rc = compress2(reinterpret_cast<Bytef*>(out.data()), &size,
                           reinterpret_cast<const Bytef*>(data.data()),
                           static_cast<uLong>(data.size()), Z_DEFAULT_COMPRESSION);
  if (rc != Z_OK) return Err("zlib compression failed (" + std::to_string(rc) + ")");
  out.resize(size);
  return out;
}

Result<std::string> ZlibDecompress(std::string_view data, size_t max_bytes) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return Err("zlib: cannot initialize");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  std::string out;
  char buf[1 << 16];
  int rc = Z_OK;
  while (rc == Z_OK) {
    z.next_out = reinterpret_cast<Bytef*>(buf);
    z.avail_out = sizeof buf;
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc != Z_OK && rc != Z_STREAM_END) break;
    out.append(buf, sizeof buf - z.avail_out);
    if (out.size() > max_bytes) {
      inflateEnd(&z);
      return Err("decompressed data exceeds " + std::to_string(max_bytes) + " bytes");
    }
    if (rc == Z_OK && z.avail_in == 0 && z.avail_out != 0) {
      rc = Z_BUF_ERROR;  // input ended before the stream did
      break;
    }
  }
  inflateEnd(&z);
  if (rc != Z_STREAM_END) return Err("not a complete zlib stream (" + std::to_string(rc) + ")");
  return out;
}

}  // namespace codl
