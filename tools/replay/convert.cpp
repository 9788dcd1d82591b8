#include "convert.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "fairpool/trace/binary.hpp"
#include "fairpool/trace/write.hpp"

namespace fairpool::replay {

namespace {

std::string converted(const trace::trace& t, target_format format) {
    if (format == target_format::binary) return trace::v3::encode(t);
    std::ostringstream text;
    if (t.version >= 3) {
        // The same vocabulary, spelled as the lowest text version that holds it: v2 with a
        // segment, a snapshot or a gap, else v1 (a v1 trace converted to v3 comes back as it was).
        trace::trace spelled = t;
        spelled.version = t.segment || !t.snapshot.empty() || t.gap ? 2 : 1;
        trace::write(text, spelled);
    } else {
        trace::write(text, t);
    }
    return std::move(text).str();
}

bool write_file(const std::filesystem::path& path, const std::string& bytes, std::ostream& err) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) err << path.string() << ": cannot write\n";
    return static_cast<bool>(out);
}

}  // namespace

int convert(const std::vector<input>& inputs, target_format format, const std::string& out_path, bool into_directory,
            std::ostream& err) {
    if (!into_directory) {
        const std::string bytes = converted(inputs.front().trace, format);
        if (out_path == "-") {
            std::cout.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
            std::cout.flush();
            return std::cout ? 0 : 2;
        }
        return write_file(out_path, bytes, err) ? 0 : 2;
    }
    std::error_code ec;
    std::filesystem::create_directories(out_path, ec);
    if (ec) return err << out_path << ": cannot create the directory: " << ec.message() << "\n", 2;
    for (const input& in : inputs) {
        const std::filesystem::path name = std::filesystem::path(in.file).filename();
        if (!write_file(std::filesystem::path(out_path) / name, converted(in.trace, format), err)) return 2;
    }
    return 0;
}

}  // namespace fairpool::replay
