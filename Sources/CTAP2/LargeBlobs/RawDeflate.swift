import CZlib

/// Raw DEFLATE (RFC 1951, no zlib or gzip header) through the system zlib, as large-blob
/// entries hold their plaintext (CTAP 2.1 §6.10.3). The only place this module calls zlib.
///
/// Inflating is bounded: the output buffer is the expected size and never grows, so a
/// hostile stream that expands past it (a "zip bomb") fails instead of taking memory.
enum RawDeflate {
    /// Why zlib failed.
    enum Failure: Error, Sendable, Hashable {
        /// The stream is not valid raw DEFLATE, or ends early.
        case invalidStream
        /// The stream inflates to more than was allowed.
        case tooLarge
        /// zlib could not start (out of memory) or failed unexpectedly; the zlib return code.
        case zlib(Int32)
    }

    /// `data` compressed with the default level.
    static func compress(_ data: [UInt8]) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        let started = czlib_deflate_init_raw(&stream, Z_DEFAULT_COMPRESSION)
        guard started == Z_OK else { throw .zlib(started) }
        defer { deflateEnd(&stream) }
        // deflateBound is an upper limit for a single Z_FINISH call.
        let bound = Int(deflateBound(&stream, uLong(data.count)))
        var output = [UInt8](repeating: 0, count: bound)
        let result = finish(&stream, input: data, output: &output, with: deflate)
        guard result == Z_STREAM_END else { throw .zlib(result) }
        return Array(output[0..<Int(stream.total_out)])
    }

    /// `data` inflated, refusing a stream whose output would pass `limit` bytes or that does not
    /// end where the input ends.
    static func decompress(_ data: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        var stream = z_stream()
        let started = czlib_inflate_init_raw(&stream)
        guard started == Z_OK else { throw .zlib(started) }
        defer { inflateEnd(&stream) }
        // One byte more than allowed tells "exactly the limit" from "more than the limit".
        var output = [UInt8](repeating: 0, count: max(limit, 0) + 1)
        let result = finish(&stream, input: data, output: &output, with: inflate)
        let produced = Int(stream.total_out)
        if produced > limit { throw .tooLarge }
        switch result {
        case Z_STREAM_END:
            guard stream.avail_in == 0 else { throw .invalidStream }
            return Array(output[0..<produced])
        case Z_DATA_ERROR, Z_BUF_ERROR, Z_NEED_DICT: throw .invalidStream
        default: throw .zlib(result)
        }
    }

    /// Runs one Z_FINISH step of `step` (deflate or inflate) from all of `input` into `output`,
    /// returning zlib's result; the stream's counters tell how much was used and produced.
    private static func finish(
        _ stream: inout z_stream, input: [UInt8], output: inout [UInt8],
        with step: (UnsafeMutablePointer<z_stream>, Int32) -> Int32
    ) -> Int32 {
        var input = input
        return input.withUnsafeMutableBufferPointer { inBuffer in
            output.withUnsafeMutableBufferPointer { outBuffer in
                stream.next_in = inBuffer.baseAddress
                stream.avail_in = uInt(inBuffer.count)
                stream.next_out = outBuffer.baseAddress
                stream.avail_out = uInt(outBuffer.count)
                return step(&stream, Z_FINISH)
            }
        }
    }
}
