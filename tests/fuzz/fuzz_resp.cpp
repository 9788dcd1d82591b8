// libFuzzer harness: arbitrary bytes from a client into the demo's RESP parser
// (tools/demo/resp.hpp), the one the proxy runs on whatever reaches its port. The first
// byte picks where the stream is cut in two (TCP may deliver it in any pieces); the
// rest is the client's byte stream. Any breach of the parser's contract aborts:
//
// - a whole stream read frame after frame (the proxy's pipelining) and the same stream
//   delivered in two pieces, re-parsing the grown buffer as proxy_server::serve does,
//   give the same requests and the same final verdict: a verdict other than
//   "incomplete" on a prefix is final;
// - the limits only refuse: under any limits the verdict is the unbounded one's, or
//   too_large; a complete frame is refused exactly when it is longer than
//   max_frame_bytes, has an array longer than max_elements or nests deeper than
//   max_depth; and "incomplete" is only said of a buffer within max_frame_bytes (the
//   proxy reads on while it is, so that is what bounds its buffer);
// - a complete frame is no longer than the input, and its canonical encoding (the
//   resp:: encoders; resp::command for an array of bulk strings, which is how the proxy
//   forwards a request) is no longer, parses under the same limits to the same value,
//   and that is exactly what resp::arguments says of it.
//
// - resp::parse_request (what the proxy reads its clients with: RESP, or an inline
//   command) gives resp::parse's verdict on a stream that starts with '*'; a complete
//   inline request (any other first byte) is an array of bulk strings within the
//   limits, one line long; and
//   the whole stream and its two pieces give the same requests and verdict with it too;
// - the scans the proxy's hot path reads with agree with the parsers: resp::scan_frame
//   gives resp::parse's verdict and length (with no depth limit: the scan does not
//   recurse); resp::scan_request gives it too on a RESP array, with its argument count
//   and first two arguments when it is an array of bulk strings, and `not_bulk` when it
//   is any other complete array; on an inline command it gives parse_request's length
//   (complete where parse_request is complete or its quotes do not balance).
//
// Every parse sees a buffer that ends where its allocation ends, so AddressSanitizer
// reports a read past the input.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../../tools/demo/resp.hpp"

namespace {

namespace resp = fairpool::demo::resp;

// What the proxy applies to its clients (proxy_server::serve, the default
// max_request_bytes), the parser's defaults (the embedded backend's), and small ones
// that short inputs reach.
const resp::limits proxy_limits{64 * 1024, 1024, 1};
const resp::limits default_limits{};
const resp::limits small_limits{48, 3, 2};

// Larger than every limit above, so that it decides what a frame is before any limit
// refuses it. A complete array has at least 3 bytes per element ("+\r\n"), and deeper
// nesting than this reads the same as far as the others go.
resp::limits unbounded(std::size_t input_size) {
    return {SIZE_MAX / 4, std::max<std::size_t>(1024, input_size / 3 + 1), 8};
}

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "fuzz_resp: %s\n", why.c_str());
    std::abort();
}


const char* name(resp::parse_status s) {
    switch (s) {
        case resp::parse_status::complete: return "complete";
        case resp::parse_status::incomplete: return "incomplete";
        case resp::parse_status::malformed: return "malformed";
        case resp::parse_status::too_large: return "too_large";
    }
    return "?";
}

bool same(const resp::value& a, const resp::value& b) {
    if (a.type != b.type || a.text != b.text || a.integer != b.integer || a.elements.size() != b.elements.size())
        return false;
    for (std::size_t i = 0; i < a.elements.size(); ++i)
        if (!same(a.elements[i], b.elements[i])) return false;
    return true;
}

bool same(const resp::parse_result& a, const resp::parse_result& b) {
    return a.status == b.status &&
           (a.status != resp::parse_status::complete || (a.length == b.length && same(a.frame, b.frame)));
}

// The deepest value's depth (the frame itself is at 0) and the longest array.
void shape(const resp::value& v, int depth, int& deepest, std::size_t& widest) {
    deepest = std::max(deepest, depth);
    if (v.type != resp::type::array) return;
    widest = std::max(widest, v.elements.size());
    for (const auto& e : v.elements) shape(e, depth + 1, deepest, widest);
}

bool all_bulk(const resp::value& v) {
    return std::all_of(v.elements.begin(), v.elements.end(),
                       [](const resp::value& e) { return e.type == resp::type::bulk_string; });
}

// The proxy's limits without a depth limit (the scans have none).
const resp::limits deep_limits{64 * 1024, 1024, 1 << 20};

// scan_frame and scan_request against the parsers, on `rest`.
void check_scans(std::string_view rest) {
    if (rest.empty()) return;
    const auto parsed = resp::parse(rest, deep_limits);
    const auto frame = resp::scan_frame(rest, deep_limits);
    if (frame.status != parsed.status || (frame.status == resp::parse_status::complete && frame.length != parsed.length))
        fail("scan_frame differs from parse");
    const auto scan = resp::scan_request(rest, deep_limits);
    if (rest.front() != '*') {
        if (!scan.inline_form) fail("scan_request: an inline command not seen as one");
        const auto inline_request = resp::parse_request(rest, deep_limits);
        const bool whole_line = inline_request.status == resp::parse_status::complete ||
                                inline_request.status == resp::parse_status::malformed;
        if ((scan.status == resp::parse_status::complete) != whole_line ||
            (!whole_line && scan.status != inline_request.status))
            fail("scan_request differs from parse_request on an inline command");
        if (inline_request.status == resp::parse_status::complete && scan.length != inline_request.length)
            fail("scan_request: an inline command's length differs from parse_request's");
        return;
    }
    if (scan.inline_form || scan.status != parsed.status ||
        (scan.status == resp::parse_status::complete && scan.length != parsed.length))
        fail("scan_request differs from parse on a RESP array");
    if (scan.status != resp::parse_status::complete) return;
    if (parsed.frame.type != resp::type::array || !all_bulk(parsed.frame)) {
        if (!scan.not_bulk) fail("scan_request: an array that is not all bulk strings, not said so");
        return;
    }
    const auto& args = parsed.frame.elements;
    if (scan.not_bulk || scan.argc != args.size()) fail("scan_request: the argument count differs");
    if (!args.empty() && scan.name != args[0].text) fail("scan_request: the name differs");
    if ((args.size() > 1 ? std::string_view(args[1].text) : std::string_view()) != scan.first)
        fail("scan_request: the first argument differs");
}

// The canonical encoding, from the demo's own encoders.
std::string encode(const resp::value& v) {
    switch (v.type) {
        case resp::type::simple_string: return resp::simple(v.text);
        case resp::type::error: return resp::error(v.text);
        case resp::type::integer: return resp::integer(v.integer);
        case resp::type::bulk_string: return resp::bulk(v.text);
        case resp::type::null: return resp::null_bulk();
        case resp::type::array: {
            if (all_bulk(v)) {
                std::vector<std::string> args;
                for (const auto& e : v.elements) args.push_back(e.text);
                return resp::command(args);
            }
            // Appended, not `"*" + ... + "\r\n"`: GCC 12 at -O3 warns falsely (-Wrestrict) there.
            std::string out = "*";
            out += std::to_string(v.elements.size());
            out += "\r\n";
            for (const auto& e : v.elements) out += encode(e);
            return out;
        }
    }
    fail("a value of no known type");
}

// The checks of one parse under `l`, given the unbounded parse `u` of the same bytes.
void check_limits(std::string_view input, const resp::limits& l, const resp::parse_result& r,
                  const resp::parse_result& u) {
    const std::string where = " (limits " + std::to_string(l.max_frame_bytes) + "/" +
                              std::to_string(l.max_elements) + "/" + std::to_string(l.max_depth) + ")";
    if (r.status == resp::parse_status::incomplete && input.size() > l.max_frame_bytes)
        fail("incomplete with " + std::to_string(input.size()) + " bytes buffered" + where);
    if (r.status != resp::parse_status::too_large && !same(r, u))
        fail(std::string("the limits changed the verdict: ") + name(r.status) + " where unbounded says " +
             name(u.status) + where);
    if (u.status == resp::parse_status::too_large && r.status != resp::parse_status::too_large)
        fail(std::string("too large unbounded, but ") + name(r.status) + where);
    if (u.status == resp::parse_status::complete) {
        int deepest = 0;
        std::size_t widest = 0;
        shape(u.frame, 0, deepest, widest);
        const bool over = u.length > l.max_frame_bytes || widest > l.max_elements || deepest > l.max_depth;
        if (over != (r.status == resp::parse_status::too_large))
            fail(std::string(over ? "accepted" : "refused") + " a frame of " + std::to_string(u.length) +
                 " bytes, " + std::to_string(widest) + " elements, depth " + std::to_string(deepest) + where);
    }
    if (r.status != resp::parse_status::complete) return;
    if (r.length == 0 || r.length > input.size()) fail("a frame length outside the input" + where);
    const std::string canonical = encode(r.frame);
    if (canonical.size() > r.length) fail("the canonical encoding is longer than the frame" + where);
    const auto again = resp::parse(canonical, l);
    if (again.status != resp::parse_status::complete || again.length != canonical.size() || !same(again.frame, r.frame))
        fail("the canonical encoding does not read back" + where);
    const auto args = resp::arguments(r.frame);
    const bool command = r.frame.type == resp::type::array && !r.frame.elements.empty() && all_bulk(r.frame);
    if (args.empty() == command) fail("resp::arguments disagrees with the frame's shape" + where);
    if (command) {
        if (args.size() != r.frame.elements.size()) fail("resp::arguments lost arguments" + where);
        if (resp::command(args) != canonical) fail("resp::command is not the canonical encoding" + where);
    }
}

// The parse of `input` under the proxy's limits, every check applied under every limits.
resp::parse_result parse_checked(std::string_view input) {
    const auto u = resp::parse(input, unbounded(input.size()));
    const auto r = resp::parse(input, proxy_limits);
    check_limits(input, proxy_limits, r, u);
    check_limits(input, default_limits, resp::parse(input, default_limits), u);
    check_limits(input, small_limits, resp::parse(input, small_limits), u);
    return r;
}

// A copy of the first `n` bytes in an allocation of exactly that size.
std::unique_ptr<char[]> exact_copy(std::string_view s, std::size_t n) {
    auto copy = std::make_unique<char[]>(std::max<std::size_t>(n, 1));
    std::memcpy(copy.get(), s.data(), n);
    return copy;
}

struct session {
    std::vector<resp::value> requests;
    resp::parse_status verdict = resp::parse_status::incomplete;  // of what is left over
};

using parser = resp::parse_result (*)(std::string_view, const resp::limits&);

// The stream as proxy_server::serve reads it, given `cut` bytes, then all of them:
// parse the buffer; incomplete, read more (or the client is done); complete, serve the
// request and drop it from the buffer; anything else, answer and close.
session serve(std::string_view stream, std::size_t cut, parser parse = resp::parse) {
    const auto first = exact_copy(stream, cut);
    std::string_view buffer(first.get(), cut);
    bool all_read = false;
    std::size_t consumed = 0;
    session s;
    for (;;) {
        const auto parsed = parse(buffer.substr(consumed), proxy_limits);
        s.verdict = parsed.status;
        if (parsed.status == resp::parse_status::incomplete) {
            if (all_read) break;
            buffer = stream, all_read = true;
            continue;
        }
        if (parsed.status != resp::parse_status::complete) break;
        s.requests.push_back(parsed.frame);
        consumed += parsed.length;
    }
    return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view stream(reinterpret_cast<const char*>(data) + 1, size - 1);
    const std::size_t cut = stream.size() * data[0] / 255;

    // The whole stream at once, frame after frame, every frame checked.
    session whole;
    for (std::size_t at = 0;;) {
        const auto parsed = parse_checked(stream.substr(at));
        whole.verdict = parsed.status;
        if (parsed.status != resp::parse_status::complete) break;
        whole.requests.push_back(parsed.frame);
        at += parsed.length;
    }

    // In two pieces, as the proxy reads them.
    const session pieces = serve(stream, cut);
    if (pieces.verdict != whole.verdict || pieces.requests.size() != whole.requests.size())
        fail("cut at " + std::to_string(cut) + ": " + std::to_string(pieces.requests.size()) + " requests then " +
             name(pieces.verdict) + ", where the whole stream gives " + std::to_string(whole.requests.size()) +
             " then " + name(whole.verdict));
    for (std::size_t i = 0; i < whole.requests.size(); ++i)
        if (!same(pieces.requests[i], whole.requests[i]))
            fail("cut at " + std::to_string(cut) + ": request " + std::to_string(i) + " differs");

    // The same with the proxy's request parser, which also reads inline commands.
    session requests;
    for (std::size_t at = 0;;) {
        const std::string_view rest = stream.substr(at);
        const auto parsed = resp::parse_request(rest, proxy_limits);
        check_scans(rest);
        requests.verdict = parsed.status;
        if (!rest.empty() && rest.front() == '*' && !same(parsed, resp::parse(rest, proxy_limits)))
            fail("parse_request differs from parse on a RESP array");
        if (parsed.status == resp::parse_status::incomplete && rest.size() > proxy_limits.max_frame_bytes)
            fail("parse_request: incomplete beyond max_frame_bytes");
        if (parsed.status != resp::parse_status::complete) break;
        if (parsed.length == 0 || parsed.length > rest.size() || parsed.length > proxy_limits.max_frame_bytes)
            fail("parse_request: a request length outside the input or the limit");
        if (rest.front() != '*') {
            if (parsed.frame.type != resp::type::array || !all_bulk(parsed.frame) ||
                parsed.frame.elements.size() > proxy_limits.max_elements)
                fail("parse_request: an inline request that is not an array of bulk strings within the limits");
            if (rest.substr(0, parsed.length).find('\n') != parsed.length - 1)
                fail("parse_request: an inline request that is not one line");
        }
        requests.requests.push_back(parsed.frame);
        at += parsed.length;
    }
    const session request_pieces = serve(stream, cut, resp::parse_request);
    if (request_pieces.verdict != requests.verdict || request_pieces.requests.size() != requests.requests.size())
        fail("parse_request, cut at " + std::to_string(cut) + ": the pieces read differently from the whole");
    for (std::size_t i = 0; i < requests.requests.size(); ++i)
        if (!same(request_pieces.requests[i], requests.requests[i]))
            fail("parse_request, cut at " + std::to_string(cut) + ": request " + std::to_string(i) + " differs");

    // A short stream: every prefix of its first frame, each in its own allocation.
    // Shorter than a complete frame, it is incomplete; any other verdict is final.
    if (stream.size() <= 64) {
        const auto full = resp::parse(stream, proxy_limits);
        for (std::size_t n = 0; n <= stream.size(); ++n) {
            const auto copy = exact_copy(stream, n);
            const auto prefix = resp::parse(std::string_view(copy.get(), n), proxy_limits);
            const bool short_of_frame = full.status == resp::parse_status::complete && n < full.length;
            if (short_of_frame ? prefix.status != resp::parse_status::incomplete
                               : prefix.status != resp::parse_status::incomplete && !same(prefix, full))
                fail("the first " + std::to_string(n) + " bytes read " + name(prefix.status) + ", the whole " +
                     name(full.status));
        }
    }
    return 0;
}
