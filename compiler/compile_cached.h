/* compiler/compile_cached.h — `nxcc compile` with the compile cache around
 * the driver (DESIGN.md section 8; the protocol in compiler/cache.h).
 *
 * key = nx_fingerprint(module as read) + nx_flags_hash(flags). A hit writes
 * the cached .neff and prints "cache hit (<where>)"; a miss takes the key's
 * lock, looks again (a concurrent compile may have finished), compiles,
 * stores model.hlo_module.pb, compile_flags.json and model.neff, and prints
 * "cache miss". A failed compile stores model.log and is reported from the
 * cache next time until --retry-failed. --no-cache skips all of it. */
#ifndef NX_COMPILE_CACHED_H
#define NX_COMPILE_CACHED_H

#include "compiler/driver.h"
#include "compiler/flags.h"
#include "compiler/log.h"

/* Maps the parsed neuronx-cc flags onto the driver's options. The strings
 * are static or f's; o->output is f->output or "file.neff" (neuronx-cc's
 * default). po (may be NULL) receives the pass-manager flags and is what
 * o->passes points to: it borrows f's strings, so f must outlive both.
 * --disable-pass names nxcc has no pass for are logged at warning. */
void nx_compile_opts_from_flags(const nx_compile_flags *f, nx_compile_opts *o, nx_pass_opts *po, nx_log *log);

/* nx_driver_compile with its story in the log: the pass manager's output
 * (timing table at info, pass messages at info/debug; on the console too
 * with --time-passes) and the time of each phase. o comes from
 * nx_compile_opts_from_flags. */
nx_status nx_compile_logged(const char *file, const nx_compile_flags *f, nx_compile_opts *o, nx_log *log,
                            bool keep_module, nx_compile_result *r, nx_diag *d);

/* Compiles f->inputs[0] to the output file through the cache. Prints what
 * happened (the result line: "cache hit (WHERE): OUT in T s", "cache miss:
 * compiled FILE in T s, stored in WHERE" or "..., not stored: REASON"; to
 * the log at info instead when result_to_log); returns the exit status.
 * stats: print --stats after a compile or hit. Messages go through log
 * (--verbose, --logfile). */
int nx_compile_cached(const nx_compile_flags *f, bool stats, bool result_to_log, nx_log *log);

/* `nxcc compile` (neuronx_cc false) and `neuronx-cc compile` (true: the
 * framework wrapper's conventions, compiler/mode_neuronx_cc.c). argv[0] is
 * the subcommand. */
int nx_compile_main(int argc, char **argv, bool neuronx_cc);

#endif
