#include <zlib.h>

/* deflateInit2 and inflateInit2 are macros (they pass the library version and the stream
   size), which Swift cannot call; these wrappers can be. Raw DEFLATE (RFC 1951) is asked
   for with negative window bits. */
static inline int czlib_deflate_init_raw(z_stream *stream, int level) {
    return deflateInit2(stream, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
}

static inline int czlib_inflate_init_raw(z_stream *stream) {
    return inflateInit2(stream, -MAX_WBITS);
}
