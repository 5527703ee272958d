/* ir/hlo/print_internal.h — shared by the HLO text printer files (print.c,
 * print_literal.c) and the fingerprint. Not part of the public IR API. */
#ifndef NX_PRINT_INTERNAL_H
#define NX_PRINT_INTERNAL_H

#include "ir/ir.h"

/* A growing malloc'd string; the printers build their output in one. */
typedef struct nx_buf {
	char *s;
	size_t len, cap;
} nx_buf;

void nx_buf_putn(nx_buf *b, const char *s, size_t n);
void nx_buf_puts(nx_buf *b, const char *s);
void nx_buf_putc(nx_buf *b, char c);
void nx_buf_printf(nx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Returns the NUL-terminated string (never NULL) and leaves b empty. */
char *nx_buf_take(nx_buf *b);

/* s with C-style escapes (\" \\ \n \t \r, other control bytes as \ooo),
 * without the surrounding quotes. */
void nx_buf_escaped(nx_buf *b, const char *s);

/* A shape as XLA's HumanString prints it: tuples get a / *index=N* / comment
 * before every fifth element. */
void nx_buf_shape(nx_buf *b, const nx_shape *s, bool with_layout);

/* The value part of a literal: "{1, 2}", "true", "(1, 0)", "(1, {2, 3})". */
void nx_buf_literal_value(nx_buf *b, const nx_literal *l);

/* Shortest decimal that reads back as the same value of type t (a float
 * type); bits holds the raw storage value (zero-extended). */
void nx_buf_float(nx_buf *b, nx_type t, uint64_t bits);

/* The FileNames ... StackFrames tables as XLA prints them (nothing when
 * empty), each followed by a blank line, then one more (stack_frames.c). */
void nx_buf_stack_frames(nx_buf *b, const nx_stack_frames *s);

#endif
