/* ir/hlo/proto.h — internal to the HloModuleProto reader and writer
 * (ir/hlo/proto_read.c, ir/hlo/proto_write.c, ir/hlo/proto_text.c).
 *
 * Some IR attributes are text (sharding, metadata, layout tiles) while XLA's
 * proto has structured fields for them. The writer maps the text to the
 * structure and, when formatting that structure back does not give the very
 * same text, also keeps the text in an nxcc extension field. The reader
 * formats the structure unless the extension is there. So the helpers here
 * come in pairs: parse (writer side) and format (reader side). */
#ifndef NX_PROTO_H
#define NX_PROTO_H

#include "ir/ir.h"
#include "ir/hlo/hlo.pb-c.h"

/* Allocates one protobuf-c message of type T in arena a, initialized. */
#define NX_PB_NEW(a, var, T, INIT)                     \
	do {                                               \
		T nx_pb_init_ = INIT;                          \
		(var) = nx_arena_alloc((a), sizeof(T));        \
		*(var) = nx_pb_init_;                          \
	} while (0)

/* Sharding text (what is inside sharding={...}) -> OpSharding. Returns
 * false when the text uses a form we do not map; *out is then unusable. */
bool nx_pb_sharding_parse(nx_arena *a, const char *text, Xla__OpSharding **out);
/* OpSharding -> sharding text; NULL if the proto uses something we cannot
 * print (named shardings, unknown types). */
char *nx_pb_sharding_format(nx_arena *a, const Xla__OpSharding *s);

/* Layout text after minor_to_major (":T(8,128)E(4)S(1)") <-> LayoutProto's
 * tiles / element_size_in_bits / memory_space. */
bool nx_pb_layout_extra_parse(nx_arena *a, const char *text, Xla__LayoutProto *l);
char *nx_pb_layout_extra_format(nx_arena *a, const Xla__LayoutProto *l); /* NULL if none */

/* metadata={...} entries <-> OpMetadata. The format side gives the entries in
 * XLA's printing order; returns the count. */
void nx_pb_metadata_fill(nx_arena *a, const nx_kv *kv, int n, Xla__OpMetadata *md);
int nx_pb_metadata_entries(nx_arena *a, const Xla__OpMetadata *md, nx_kv **out);

/* The IR element type name <-> API version / comparison enums. */
int nx_pb_api_version_num(const char *name); /* -1 unknown */
const char *nx_pb_api_version_name(int num); /* NULL for 0 / unknown */

/* Whether an opcode's text always carries dimensions= / replica_groups=, so
 * that the reader can tell a given-but-empty list from an absent one. */
bool nx_pb_op_implies_dimensions(nx_opcode op);
bool nx_pb_op_implies_replica_groups(nx_opcode op);

/* Row-major index <-> index in the shape's layout order (for literals whose
 * shape has a non-default layout: LiteralProto stores physical order). */
void nx_pb_permute(const nx_shape *s, const void *src, void *dst, int elem, bool to_physical);

/* The stack-frame tables <-> StackFrameIndexProto (ir/hlo/stack_frames.c).
 * to_proto returns NULL for empty tables; from_proto checks every id and
 * returns false with a message in err on a dangling one. */
Xla__StackFrameIndexProto *nx_pb_stack_frames_to(nx_arena *a, const nx_stack_frames *s);
bool nx_pb_stack_frames_from(nx_arena *a, const Xla__StackFrameIndexProto *p, nx_stack_frames *s,
                             char *err, size_t nerr);

#endif
