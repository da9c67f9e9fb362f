/* fx.h — the .fx language: a concise way to write tensor computations, lowered to the IR.
 *
 * Where it sits: .fx text --fx_feed--> FxState (parsed statements) --fx_build_module--> IrModule,
 * which then goes through the pass pipeline exactly like a loaded HLO module.
 *
 * The language, by example:
 *
 *   # comment
 *   let n = 2048                        # compile-time integer (usable in shapes and arithmetic)
 *   param x: f32[n, 4]                  # an input: parameter(0), parameter(1), ... in order
 *   const g = 9.8                       # named scalar constant, f32 unless typed: const g: f64 = 9.8
 *   y = sin(x) * 2 + g                  # elementwise; scalars and shapes broadcast as in numpy
 *   z = x[:, 0]                         # static slicing/indexing with numpy semantics
 *   c = concat([x, x], axis=0)          # also stack([...], axis=0)
 *   r = sum(x, axis=1)                  # sum max min mean prod; axis may be a list or omitted;
 *                                       #   keepdims=true keeps reduced dimensions (size 1)
 *   m = matmul(a, b)                    # dot; conv2d(x, w, stride=1, pad="same") (NHWC / HWIO)
 *   u = rand(f32[n])                    # uniform [0, 1) (XLA rng); rand(f32[n], lo, hi)
 *   v = rand(f32[n], key=k)             # counter-based: see "Random numbers" below
 *   s = select(x > 0, x, 0)             # comparisons give pred; & | ~ on pred (and integers)
 *   t = reshape(x, [4, n])              # transpose(x, [1, 0]), broadcast(x, [n, 4]), cast(x, f16),
 *                                       # iota(s32[n], axis=0), where(c, a, b), maximum, minimum, ...
 *   loop 10000 carry (s = s0) {         # while loop as jax.lax.fori_loop lowers it
 *     s = s + 1
 *   }
 *   def f(a, b) { return a * b, a + b } # functions: lowered to `call` (one computation per
 *   p, q = f(x, x)                      #   argument signature); several results destructure
 *   out y, r                            # the results: the entry's root tuple
 *
 * Precedence, lowest first: `|`, `&`, comparisons, `+ -`, `* /`, unary `- ~`, `**`, indexing.
 * (Unlike Python, `&` and `|` bind looser than comparisons: `abs(x) > 2.4 | abs(t) > 0.2` works.)
 * Integer and float literals and `let` values are weakly typed: they take the type of the tensor
 * they meet. Named constants are typed; mixing two different element types is an error (use
 * cast). `/` keeps the type: integer operands divide with truncation. `x ** 2` (an integer
 * literal or let) lowers to multiplies as JAX's integer_pow does; `x ** y` to power.
 *
 * Names: a statement `y = ...` names its last instruction `y` (made unique: `y.12` when taken);
 * helpers get XLA-style names (`multiply.7`). Every instruction's loc is its statement's
 * file:line:col. Variables may be reassigned; `let`, `param`, `const` and `def` names may not.
 *
 * Loops: `loop N carry (a = a0, b = b0) { ... }` becomes a while whose state is the tuple
 * (counter, a, b, captured values...): the condition is counter < N, the body returns counter+1 and
 * the carries, values the body reads from outside the loop ride along unchanged (as JAX's
 * fori_loop carries its closed-over constants), and the while has
 * backend_config={"known_trip_count":{"n":"N"}}. After the loop, a and b hold the results.
 *
 * Random numbers. rand(T[dims]) and rand(T[dims], lo, hi) lower to XLA's stateless-looking `rng`
 * with distribution=rng_uniform (a cuRAND-style library call). rand(T[dims], lo, hi, key=k), with
 * k a u32[2] value (usually carried by a loop), lowers as JAX lowers jax.random.uniform on a GPU:
 *   k0 = reshape(slice(k, [0:1])), k1 = reshape(slice(k, [1:2]))        (u32[])
 *   bits = get-tuple-element(custom-call(broadcast(k0), broadcast(k1), iota, broadcast(0)),
 *                             custom_call_target="cuda_threefry2x32"), index=0
 *   f = bitcast-convert(shift-right-logical(bits, 9) | 0x3f800000, f32) - 1   (in [0, 1))
 *   u = maximum(lo, f * (hi - lo) + lo)
 * The custom call computes, element by element, Threefry-2x32 with 20 rounds (Salmon et al.,
 * Random123) of the counter pair (x0, x1) = (operand 2, operand 3) under the key (operand 0,
 * operand 1), all u32 arrays of the same shape; it returns the tuple (y0, y1) of the two output
 * words. So the RNG library kernel has cheap parents that derive from the key, as in the paper's
 * CartPole graph. Advance the key between steps (e.g. `key = key + 1`) to get fresh numbers. */
#ifndef FXPLAIN_FX_H
#define FXPLAIN_FX_H

#include <stdbool.h>

#include "../ir/ir.h"

/* Definitions accumulated across statements (a file, or lines typed at the prompt). */
typedef struct FxState FxState;

FxState *fx_state_new(void);
void fx_state_free(FxState *st);

/* Parses and lowers one chunk (a whole file, or one statement or block typed at the prompt).
 * first_line is the line number of text's first line in `filename` ("<repl>", "<stdin>" or a
 * path). On error fills a located err (file:line:col + source line) and leaves st exactly as
 * before. The text is copied. */
bool fx_feed(FxState *st, const char *text, const char *filename, int first_line, FxError *err);

/* True when text is an unfinished block (an unclosed { ( [), so the shell reads another line. */
bool fx_needs_more(const char *text);

/* True when the line begins a .fx statement (let/param/const/def/loop/out, or NAME = ..., or
 * NAME, NAME = ...), used by the shell to tell statements from commands. */
bool fx_is_statement(const char *line);

/* Builds an IrModule from the state: entry computation "main" whose root is the `out` list as a
 * tuple, or the last assigned value when there is no `out`. The caller owns the module. Returns
 * NULL with err filled when there is nothing to build or allocation fails. */
IrModule *fx_build_module(FxState *st, const char *module_name, FxError *err);

/* Number of statements the state holds (for `show stats` and tests). */
int fx_state_statements(const FxState *st);

#endif
