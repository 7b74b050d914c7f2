package cuda

// The kernels, as PTX text the driver JIT-compiles for whatever GPU it
// finds (cuModuleLoadDataEx). Written by hand, for PTX ISA 7.0 (CUDA 11.0,
// the oldest driver this package loads) and target sm_60, so every driver
// since R450 and every GPU since Pascal can compile them; nothing in them
// needs more than sm_20's instructions. Each kernel takes its parameters in
// exactly the order and types the launch helpers in api.go pass them.
//
// fma_loop(out *f32, iters u32, a f32, b f32): each thread runs 8
// independent chains x = fma(x, a, b), twice per iteration (16 FMAs, 32
// flops, per thread per iteration; independent chains keep the FMA pipes
// full), then stores the sum of its chains at out[thread]. Chain c starts at
// c. With a = b = 1 every FMA adds 1 exactly (below 2^24), so after n
// iterations every thread stores 0+1+…+7 + 16n = 28 + 16n: the caller
// checks that figure on the calibration launch, so a GPU that computes
// wrong, or a launch that did nothing, is caught.
//
// pattern_write(buf *u32, nwords u64, seed u32): grid-stride loop; word i
// gets patternWord(i, seed): the index folded to 32 bits (i ^ i>>32), times
// 0x9E3779B1 (Knuth's multiplicative hash), xor seed. Every word differs
// from its neighbours, so a write that lands at the wrong address (an
// address-line fault) reads back wrong; the caller runs it with a seed and
// with its complement, so every bit of every word is seen both 0 and 1.
//
// pattern_check(buf *u32, nwords u64, seed u32, count *u64): the same loop
// reads each word back (ld.global.cv: fetched again, not from a cache line
// the write left) and counts the words that differ in a register; a thread
// that saw any adds its count to *count with one atomic add.
const kernelsPTX = `//
// gpuprobe verify kernels (hand-written PTX; see cuda/ptx.go).
//
.version 7.0
.target sm_60
.address_size 64

.visible .entry fma_loop(
	.param .u64 fma_loop_out,
	.param .u32 fma_loop_iters,
	.param .f32 fma_loop_a,
	.param .f32 fma_loop_b
)
{
	.reg .pred %p<2>;   // %p1: loop again
	.reg .b32 %r<7>;    // %r1 iters, %r2 ctaid.x, %r3 ntid.x, %r4 tid.x, %r5 thread index, %r6 loop counter
	.reg .f32 %f<11>;   // %f0..%f7 the chains, %f8 a, %f9 b, %f10 their sum
	.reg .b64 %rd<4>;   // %rd1 out, %rd2 &out[thread], %rd3 byte offset

	ld.param.u64 %rd1, [fma_loop_out];
	ld.param.u32 %r1, [fma_loop_iters];
	ld.param.f32 %f8, [fma_loop_a];
	ld.param.f32 %f9, [fma_loop_b];
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.u32 %r5, %r2, %r3, %r4;      // thread = ctaid.x * ntid.x + tid.x
	mov.f32 %f0, 0f00000000;            // 0.0
	mov.f32 %f1, 0f3F800000;            // 1.0
	mov.f32 %f2, 0f40000000;            // 2.0
	mov.f32 %f3, 0f40400000;            // 3.0
	mov.f32 %f4, 0f40800000;            // 4.0
	mov.f32 %f5, 0f40A00000;            // 5.0
	mov.f32 %f6, 0f40C00000;            // 6.0
	mov.f32 %f7, 0f40E00000;            // 7.0
	mov.u32 %r6, 0;
	setp.eq.u32 %p1, %r1, 0;
	@%p1 bra FMA_DONE;
FMA_LOOP:
	fma.rn.f32 %f0, %f0, %f8, %f9;
	fma.rn.f32 %f1, %f1, %f8, %f9;
	fma.rn.f32 %f2, %f2, %f8, %f9;
	fma.rn.f32 %f3, %f3, %f8, %f9;
	fma.rn.f32 %f4, %f4, %f8, %f9;
	fma.rn.f32 %f5, %f5, %f8, %f9;
	fma.rn.f32 %f6, %f6, %f8, %f9;
	fma.rn.f32 %f7, %f7, %f8, %f9;
	fma.rn.f32 %f0, %f0, %f8, %f9;
	fma.rn.f32 %f1, %f1, %f8, %f9;
	fma.rn.f32 %f2, %f2, %f8, %f9;
	fma.rn.f32 %f3, %f3, %f8, %f9;
	fma.rn.f32 %f4, %f4, %f8, %f9;
	fma.rn.f32 %f5, %f5, %f8, %f9;
	fma.rn.f32 %f6, %f6, %f8, %f9;
	fma.rn.f32 %f7, %f7, %f8, %f9;
	add.u32 %r6, %r6, 1;
	setp.lt.u32 %p1, %r6, %r1;
	@%p1 bra FMA_LOOP;
FMA_DONE:
	add.rn.f32 %f10, %f0, %f1;          // ((((((f0+f1)+f2)+f3)+f4)+f5)+f6)+f7
	add.rn.f32 %f10, %f10, %f2;
	add.rn.f32 %f10, %f10, %f3;
	add.rn.f32 %f10, %f10, %f4;
	add.rn.f32 %f10, %f10, %f5;
	add.rn.f32 %f10, %f10, %f6;
	add.rn.f32 %f10, %f10, %f7;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r5, 4;
	add.s64 %rd2, %rd2, %rd3;
	st.global.f32 [%rd2], %f10;
	ret;
}

.visible .entry pattern_write(
	.param .u64 pattern_write_buf,
	.param .u64 pattern_write_n,
	.param .u32 pattern_write_seed
)
{
	.reg .pred %p<2>;   // %p1: i >= nwords
	.reg .b32 %r<8>;    // %r1 seed, %r2 ctaid.x, %r3 ntid.x, %r4 tid.x, %r5 first index, %r6 nctaid.x, %r7 the word
	.reg .b64 %rd<7>;   // %rd1 buf (global), %rd2 nwords, %rd3 i, %rd4 stride, %rd5 &buf[i], %rd6 i folded

	ld.param.u64 %rd1, [pattern_write_buf];
	ld.param.u64 %rd2, [pattern_write_n];
	ld.param.u32 %r1, [pattern_write_seed];
	cvta.to.global.u64 %rd1, %rd1;
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.u32 %r5, %r2, %r3, %r4;      // first index = ctaid.x * ntid.x + tid.x
	cvt.u64.u32 %rd3, %r5;
	mov.u32 %r6, %nctaid.x;
	mul.wide.u32 %rd4, %r6, %r3;        // stride = nctaid.x * ntid.x
PW_LOOP:
	setp.ge.u64 %p1, %rd3, %rd2;
	@%p1 bra PW_DONE;
	shr.u64 %rd6, %rd3, 32;
	xor.b64 %rd6, %rd6, %rd3;           // i ^ (i >> 32)
	cvt.u32.u64 %r7, %rd6;              // its low 32 bits
	mul.lo.s32 %r7, %r7, -1640531535;   // * 0x9E3779B1
	xor.b32 %r7, %r7, %r1;              // ^ seed
	shl.b64 %rd5, %rd3, 2;
	add.s64 %rd5, %rd1, %rd5;
	st.global.u32 [%rd5], %r7;
	add.s64 %rd3, %rd3, %rd4;
	bra.uni PW_LOOP;
PW_DONE:
	ret;
}

.visible .entry pattern_check(
	.param .u64 pattern_check_buf,
	.param .u64 pattern_check_n,
	.param .u32 pattern_check_seed,
	.param .u64 pattern_check_count
)
{
	.reg .pred %p<3>;   // %p1: i >= nwords, %p2: the word differs
	.reg .b32 %r<9>;    // %r1 seed, %r2 ctaid.x, %r3 ntid.x, %r4 tid.x, %r5 first index, %r6 nctaid.x, %r7 expected, %r8 read
	.reg .b64 %rd<10>;  // %rd1 buf, %rd2 nwords, %rd3 i, %rd4 stride, %rd5 &buf[i], %rd6 i folded, %rd7 count, %rd8 mismatches, %rd9 0 or 1

	ld.param.u64 %rd1, [pattern_check_buf];
	ld.param.u64 %rd2, [pattern_check_n];
	ld.param.u32 %r1, [pattern_check_seed];
	ld.param.u64 %rd7, [pattern_check_count];
	cvta.to.global.u64 %rd1, %rd1;
	cvta.to.global.u64 %rd7, %rd7;
	mov.u64 %rd8, 0;
	mov.u32 %r2, %ctaid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, %tid.x;
	mad.lo.u32 %r5, %r2, %r3, %r4;
	cvt.u64.u32 %rd3, %r5;
	mov.u32 %r6, %nctaid.x;
	mul.wide.u32 %rd4, %r6, %r3;
PC_LOOP:
	setp.ge.u64 %p1, %rd3, %rd2;
	@%p1 bra PC_DONE;
	shr.u64 %rd6, %rd3, 32;
	xor.b64 %rd6, %rd6, %rd3;
	cvt.u32.u64 %r7, %rd6;
	mul.lo.s32 %r7, %r7, -1640531535;
	xor.b32 %r7, %r7, %r1;              // the word pattern_write wrote
	shl.b64 %rd5, %rd3, 2;
	add.s64 %rd5, %rd1, %rd5;
	ld.global.cv.u32 %r8, [%rd5];
	setp.ne.u32 %p2, %r8, %r7;
	selp.u64 %rd9, 1, 0, %p2;
	add.s64 %rd8, %rd8, %rd9;
	add.s64 %rd3, %rd3, %rd4;
	bra.uni PC_LOOP;
PC_DONE:
	setp.eq.u64 %p1, %rd8, 0;
	@%p1 bra PC_RET;
	atom.global.add.u64 %rd9, [%rd7], %rd8;
PC_RET:
	ret;
}
`

// The kernels' entry points, as the PTX names them.
const (
	kernelFMA          = "fma_loop"
	kernelPatternWrite = "pattern_write"
	kernelPatternCheck = "pattern_check"
)

// fmaExpect is what fma_loop stores for every thread after iters
// iterations with a = b = 1: 0+1+…+7 + 16·iters (exact below 2^24).
func fmaExpect(iters uint32) float32 { return float32(28 + 16*uint64(iters)) }
