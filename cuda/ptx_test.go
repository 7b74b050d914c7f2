package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// The stub runs the kernels as C; these tests run the PTX itself, through a
// strict interpreter of exactly the PTX subset the kernels use (an
// instruction or operand form it does not know fails the test), thread by
// thread over a small grid, with every memory access bounds-checked. What
// they cannot show is whether a real driver's JIT accepts the text: that
// needs a GPU.

// patternWord is pattern_write's word i, as the Go side knows it.
func patternWord(i uint64, seed uint32) uint32 {
	return uint32(i^(i>>32))*0x9E3779B1 ^ seed
}

type ptxParam struct{ name, typ string }

type ptxInst struct {
	guard string // "%p1", "!%p1" or ""
	op    string
	args  []string
	line  string
}

type ptxKernel struct {
	name   string
	params []ptxParam
	regs   map[string]int // prefix → count declared
	code   []ptxInst
	labels map[string]int
}

func parsePTX(t *testing.T, src string) map[string]*ptxKernel {
	t.Helper()
	out := map[string]*ptxKernel{}
	for _, chunk := range strings.Split(src, ".visible .entry ")[1:] {
		head, body, ok := strings.Cut(chunk, "{")
		if !ok {
			t.Fatalf("no body in %.40q", chunk)
		}
		name, plist, _ := strings.Cut(head, "(")
		k := &ptxKernel{name: strings.TrimSpace(name), regs: map[string]int{}, labels: map[string]int{}}
		plist, _, _ = strings.Cut(plist, ")")
		for _, p := range strings.Split(plist, ",") {
			f := strings.Fields(p)
			if len(f) != 3 || f[0] != ".param" {
				t.Fatalf("%s: parameter %q", k.name, p)
			}
			k.params = append(k.params, ptxParam{f[2], strings.TrimPrefix(f[1], ".")})
		}
		body, _, _ = strings.Cut(body, "\n}")
		for _, l := range strings.Split(body, "\n") {
			l, _, _ = strings.Cut(l, "//")
			l = strings.TrimSpace(l)
			switch {
			case l == "":
			case strings.HasPrefix(l, ".reg "):
				f := strings.Fields(strings.TrimSuffix(l, ";"))
				reg, n, _ := strings.Cut(f[2], "<")
				k.regs[reg], _ = strconv.Atoi(strings.TrimSuffix(n, ">"))
			case strings.HasSuffix(l, ":"):
				k.labels[strings.TrimSuffix(l, ":")] = len(k.code)
			case strings.HasSuffix(l, ";"):
				in := ptxInst{line: l}
				l = strings.TrimSuffix(l, ";")
				if strings.HasPrefix(l, "@") {
					in.guard, l, _ = strings.Cut(l[1:], " ")
				}
				op, rest, _ := strings.Cut(l, " ")
				in.op = op
				for _, a := range strings.Split(rest, ",") {
					if a = strings.TrimSpace(a); a != "" {
						in.args = append(in.args, a)
					}
				}
				k.code = append(k.code, in)
			default:
				t.Fatalf("%s: line %q", k.name, l)
			}
		}
		out[k.name] = k
	}
	return out
}

// ptxMem is device memory: one arena at a base address far from zero.
type ptxMem struct {
	base uint64
	b    []byte
}

func (m *ptxMem) alloc(n int) uint64 {
	p := m.base + uint64(len(m.b))
	m.b = append(m.b, make([]byte, (n+15)/16*16)...)
	return p
}

func (m *ptxMem) at(addr uint64, size int) ([]byte, error) {
	if addr < m.base || addr+uint64(size) > m.base+uint64(len(m.b)) || addr%uint64(size) != 0 {
		return nil, fmt.Errorf("access of %d bytes at %#x outside device memory or misaligned", size, addr)
	}
	return m.b[addr-m.base : addr-m.base+uint64(size)], nil
}

// run executes k for every thread of a grid × block launch.
func (k *ptxKernel) run(mem *ptxMem, grid, block int, params ...uint64) error {
	if len(params) != len(k.params) {
		return fmt.Errorf("%s takes %d parameters, got %d", k.name, len(k.params), len(params))
	}
	for b := 0; b < grid; b++ {
		for th := 0; th < block; th++ {
			special := map[string]uint64{"%ctaid.x": uint64(b), "%ntid.x": uint64(block), "%tid.x": uint64(th), "%nctaid.x": uint64(grid)}
			if err := k.thread(mem, special, params); err != nil {
				return fmt.Errorf("%s block %d thread %d: %w", k.name, b, th, err)
			}
		}
	}
	return nil
}

func (k *ptxKernel) thread(mem *ptxMem, special map[string]uint64, params []uint64) error {
	regs := map[string]uint64{}
	isReg := func(s string) bool {
		if !strings.HasPrefix(s, "%") {
			return false
		}
		i := strings.IndexAny(s, "0123456789")
		if i < 0 {
			return false
		}
		n, err := strconv.Atoi(s[i:])
		return err == nil && n < k.regs[s[:i]]
	}
	val := func(s string) (uint64, error) {
		switch {
		case isReg(s):
			return regs[s], nil
		case strings.HasPrefix(s, "%") && strings.Contains(s, "."):
			v, ok := special[s]
			if !ok {
				return 0, fmt.Errorf("special register %s not in the interpreted subset", s)
			}
			return v, nil
		case strings.HasPrefix(s, "0f") && len(s) == 10:
			v, err := strconv.ParseUint(s[2:], 16, 32)
			return v, err
		}
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return 0, fmt.Errorf("operand %q is no declared register, special register or immediate", s)
		}
		return uint64(v), nil
	}
	f32 := func(v uint64) float32 { return math.Float32frombits(uint32(v)) }
	fbits := func(f float32) uint64 { return uint64(math.Float32bits(f)) }
	for pc, steps := 0, 0; pc < len(k.code); steps++ {
		if steps > 1_000_000 {
			return fmt.Errorf("runs away")
		}
		in := k.code[pc]
		pc++
		if in.guard != "" {
			g, neg := strings.CutPrefix(in.guard, "!")
			if !isReg(g) {
				return fmt.Errorf("%q: guard %s not declared", in.line, g)
			}
			if (regs[g] != 0) == neg {
				continue
			}
		}
		a := make([]uint64, len(in.args))
		for i, s := range in.args {
			if i == 0 || strings.HasPrefix(s, "[") || in.op == "bra" || in.op == "bra.uni" {
				continue
			}
			v, err := val(s)
			if err != nil {
				return fmt.Errorf("%q: %w", in.line, err)
			}
			a[i] = v
		}
		dst := ""
		if len(in.args) > 0 {
			dst = in.args[0]
		}
		need := func(n int) error {
			if len(in.args) != n {
				return fmt.Errorf("%q: %d operands, want %d", in.line, len(in.args), n)
			}
			if n > 0 && !strings.HasPrefix(dst, "[") && !isReg(dst) && !strings.HasPrefix(in.op, "bra") {
				return fmt.Errorf("%q: destination %s not declared", in.line, dst)
			}
			return nil
		}
		mem32 := func(s string) (uint64, error) { return val(strings.Trim(s, "[]")) }
		var err error
		switch in.op {
		case "ret":
			return need(0)
		case "bra", "bra.uni":
			if err = need(1); err == nil {
				to, ok := k.labels[dst]
				if !ok {
					return fmt.Errorf("%q: no label %s", in.line, dst)
				}
				pc = to
			}
		case "ld.param.u64", "ld.param.u32", "ld.param.f32":
			if err = need(2); err == nil {
				name := strings.Trim(in.args[1], "[]")
				found := false
				for i, p := range k.params {
					if p.name == name {
						if "ld.param."+p.typ != in.op {
							return fmt.Errorf("%q: the parameter is .%s", in.line, p.typ)
						}
						found = true
						regs[dst] = params[i]
						if p.typ != "u64" {
							regs[dst] &= math.MaxUint32
						}
					}
				}
				if !found {
					return fmt.Errorf("%q: no parameter %s", in.line, name)
				}
			}
		case "mov.u32", "mov.f32":
			if err = need(2); err == nil {
				regs[dst] = a[1] & math.MaxUint32
			}
		case "mov.u64", "cvta.to.global.u64":
			if err = need(2); err == nil {
				regs[dst] = a[1]
			}
		case "mad.lo.u32":
			if err = need(4); err == nil {
				regs[dst] = uint64(uint32(a[1])*uint32(a[2]) + uint32(a[3]))
			}
		case "add.u32":
			if err = need(3); err == nil {
				regs[dst] = uint64(uint32(a[1]) + uint32(a[2]))
			}
		case "add.s64":
			if err = need(3); err == nil {
				regs[dst] = a[1] + a[2]
			}
		case "mul.wide.u32":
			if err = need(3); err == nil {
				regs[dst] = uint64(uint32(a[1])) * uint64(uint32(a[2]))
			}
		case "mul.lo.s32":
			if err = need(3); err == nil {
				regs[dst] = uint64(uint32(int32(a[1]) * int32(a[2])))
			}
		case "cvt.u64.u32", "cvt.u32.u64":
			if err = need(2); err == nil {
				regs[dst] = uint64(uint32(a[1]))
			}
		case "shr.u64":
			if err = need(3); err == nil {
				regs[dst] = a[1] >> a[2]
			}
		case "shl.b64":
			if err = need(3); err == nil {
				regs[dst] = a[1] << a[2]
			}
		case "xor.b64":
			if err = need(3); err == nil {
				regs[dst] = a[1] ^ a[2]
			}
		case "xor.b32":
			if err = need(3); err == nil {
				regs[dst] = uint64(uint32(a[1]) ^ uint32(a[2]))
			}
		case "setp.eq.u32", "setp.ne.u32", "setp.lt.u32", "setp.ge.u64", "setp.eq.u64":
			if err = need(3); err == nil {
				x, y := a[1], a[2]
				if strings.HasSuffix(in.op, ".u32") {
					x, y = uint64(uint32(x)), uint64(uint32(y))
				}
				var r bool
				switch in.op[5:7] {
				case "eq":
					r = x == y
				case "ne":
					r = x != y
				case "lt":
					r = x < y
				case "ge":
					r = x >= y
				}
				regs[dst] = 0
				if r {
					regs[dst] = 1
				}
			}
		case "selp.u64":
			if err = need(4); err == nil {
				regs[dst] = a[2]
				if a[3] != 0 {
					regs[dst] = a[1]
				}
			}
		case "fma.rn.f32":
			if err = need(4); err == nil {
				regs[dst] = fbits(float32(math.FMA(float64(f32(a[1])), float64(f32(a[2])), float64(f32(a[3])))))
			}
		case "add.rn.f32":
			if err = need(3); err == nil {
				regs[dst] = fbits(f32(a[1]) + f32(a[2]))
			}
		case "st.global.f32", "st.global.u32":
			if err = need(2); err == nil {
				addr, e := mem32(in.args[0])
				if e != nil {
					return fmt.Errorf("%q: %w", in.line, e)
				}
				b, e := mem.at(addr, 4)
				if e != nil {
					return fmt.Errorf("%q: %w", in.line, e)
				}
				binary.LittleEndian.PutUint32(b, uint32(a[1]))
			}
		case "ld.global.cv.u32":
			if err = need(2); err == nil {
				addr, e := mem32(in.args[1])
				if e != nil {
					return fmt.Errorf("%q: %w", in.line, e)
				}
				b, e := mem.at(addr, 4)
				if e != nil {
					return fmt.Errorf("%q: %w", in.line, e)
				}
				regs[dst] = uint64(binary.LittleEndian.Uint32(b))
			}
		case "atom.global.add.u64":
			if err = need(3); err == nil {
				addr, e := mem32(in.args[1])
				if e != nil {
					return fmt.Errorf("%q: %w", in.line, e)
				}
				b, e := mem.at(addr, 8)
				if e != nil {
					return fmt.Errorf("%q: %w", in.line, e)
				}
				old := binary.LittleEndian.Uint64(b)
				binary.LittleEndian.PutUint64(b, old+a[2])
				regs[dst] = old
			}
		default:
			return fmt.Errorf("%q: instruction %s not in the interpreted subset", in.line, in.op)
		}
		if err != nil {
			return err
		}
	}
	return fmt.Errorf("ran off the end without ret")
}

func kernelsFor(t *testing.T) map[string]*ptxKernel {
	ks := parsePTX(t, kernelsPTX)
	if len(ks) != 3 || ks[kernelFMA] == nil || ks[kernelPatternWrite] == nil || ks[kernelPatternCheck] == nil {
		t.Fatalf("kernels parsed: %v", ks)
	}
	return ks
}

func TestPTXFMALoopComputesWhatComputeChecks(t *testing.T) {
	k := kernelsFor(t)[kernelFMA]
	const grid, block = 3, 5
	for _, c := range []struct {
		iters uint32
		a, b  float32
		want  float32
	}{
		{0, 1, 1, 28},
		{1, 1, 1, fmaExpect(1)},
		{64, 1, 1, fmaExpect(64)},
		{3, 2, 0, 28 * 64}, // each chain doubled 6 times
	} {
		mem := &ptxMem{base: 1 << 40}
		out := mem.alloc(grid * block * 4)
		mem.alloc(64) // beyond out: must stay zero
		err := k.run(mem, grid, block, out, uint64(c.iters), uint64(math.Float32bits(c.a)), uint64(math.Float32bits(c.b)))
		if err != nil {
			t.Fatal(err)
		}
		for th := 0; th < grid*block; th++ {
			b, _ := mem.at(out+uint64(th*4), 4)
			if got := math.Float32frombits(binary.LittleEndian.Uint32(b)); got != c.want {
				t.Errorf("iters %d a %g b %g: thread %d stored %g, want %g", c.iters, c.a, c.b, th, got, c.want)
			}
		}
		for _, x := range mem.b[grid*block*4:] {
			if x != 0 {
				t.Fatalf("fma_loop wrote past its output")
			}
		}
	}
}

func TestPTXPatternKernelsWriteAndCount(t *testing.T) {
	ks := kernelsFor(t)
	const grid, block, nwords = 2, 3, 37 // a stride that does not divide the buffer
	mem := &ptxMem{base: 1 << 40}
	buf := mem.alloc(nwords * 4)
	count := mem.alloc(8)
	write, check := ks[kernelPatternWrite], ks[kernelPatternCheck]
	counted := func() uint64 {
		b, _ := mem.at(count, 8)
		return binary.LittleEndian.Uint64(b)
	}
	for _, seed := range []uint32{patternSeed, ^uint32(patternSeed)} {
		if err := write.run(mem, grid, block, buf, nwords, uint64(seed)); err != nil {
			t.Fatal(err)
		}
		for i := uint64(0); i < nwords; i++ {
			b, _ := mem.at(buf+i*4, 4)
			if got := binary.LittleEndian.Uint32(b); got != patternWord(i, seed) {
				t.Fatalf("seed %#x word %d = %#x, want %#x", seed, i, got, patternWord(i, seed))
			}
		}
		before := counted()
		if err := check.run(mem, grid, block, buf, nwords, uint64(seed), count); err != nil {
			t.Fatal(err)
		}
		if counted() != before {
			t.Errorf("seed %#x: %d mismatches on what it wrote", seed, counted()-before)
		}
	}
	// Three words flipped: three mismatches, added to what count held.
	for _, i := range []uint64{0, 17, nwords - 1} {
		b, _ := mem.at(buf+i*4, 4)
		b[0] ^= 1
	}
	before := counted()
	if err := check.run(mem, grid, block, buf, nwords, uint64(^uint32(patternSeed)), count); err != nil {
		t.Fatal(err)
	}
	if got := counted() - before; got != 3 {
		t.Errorf("%d mismatches counted, want 3", got)
	}
	// Against the other seed every word differs.
	before = counted()
	if err := check.run(mem, grid, block, buf, nwords, uint64(patternSeed), count); err != nil {
		t.Fatal(err)
	}
	if got := counted() - before; got != nwords {
		t.Errorf("%d mismatches against the other seed, want %d", got, nwords)
	}
	// The word formula folds the index's high half in: words 2^32 apart
	// differ.
	if patternWord(5, patternSeed) == patternWord(5+1<<32, patternSeed) {
		t.Error("words 2^32 apart share a pattern")
	}
}
