package degrade

import (
	"math"
	"strconv"
)

// group is what a signal measures; the shed rule is stated per group.
type group uint8

const (
	groupMemory group = iota
	groupCPU
	groupQueue
)

// check is one signal against its threshold.
type check struct {
	name      string
	group     group
	sig       Signal
	threshold float64
	bound     float64 // largest possible value (+Inf when unbounded)
}

// checks lists every signal with its threshold, in reason order.
func checks(th Thresholds, r *Readings, queue Signal) [8]check {
	inf := math.Inf(1)
	return [8]check{
		{NameQueueDepth, groupQueue, queue, float64(th.QueueDepth), inf},
		{NameMemoryRatio, groupMemory, r.MemoryRatio, th.MemoryRatio, 1},
		{NameMemoryPSIFull, groupMemory, r.MemoryPSIFull, th.MemoryPSIFull, 100},
		{NameMemoryPSISome, groupMemory, r.MemoryPSISome, th.MemoryPSISome, 100},
		{NameRSS, groupMemory, r.RSSMiB, th.RSSMiB, inf},
		{NameCPUThrottled, groupCPU, r.CPUThrottledRatio, th.CPUThrottledRatio, 1},
		{NameCPUPSIFull, groupCPU, r.CPUPSIFull, th.CPUPSIFull, 100},
		{NameCPUPSISome, groupCPU, r.CPUPSISome, th.CPUPSISome, 100},
	}
}

// severeAt is where a signal turns severe: threshold*factor, but for a
// bounded signal no further than halfway from the threshold to the bound
// (memory ratio 0.9 -> 0.95, CPU PSI some 50 -> 75, PSI full 1 -> 2).
func severeAt(threshold, bound, factor float64) float64 {
	return min(threshold*factor, threshold+(bound-threshold)/2)
}

// evaluate is the policy as a pure function. Clamp when any available
// signal reaches its threshold. Shed when a memory signal is severe (the
// OOM killer ends everyone's work, refusing new work is cheaper), or when a
// CPU signal and the queue are both severe (work piles up faster than the
// CPU drains it). CPU or queue alone only clamp: slow answers lose nothing,
// and the admission queue bounds itself with 429.
func evaluate(th Thresholds, factor float64, r *Readings, queue Signal) (Level, []string) {
	cs := checks(th, r, queue)
	var over, severe [3]bool
	var reasons []string
	for _, c := range cs {
		if !c.sig.OK || c.threshold <= 0 || c.sig.Value < c.threshold {
			continue
		}
		over[c.group] = true
		cut := c.threshold
		isSevere := c.sig.Value >= severeAt(c.threshold, c.bound, factor)
		if isSevere {
			severe[c.group] = true
			cut = severeAt(c.threshold, c.bound, factor)
		}
		reasons = append(reasons, reason(c.name, c.sig.Value, cut, isSevere))
	}
	switch {
	case severe[groupMemory] || (severe[groupCPU] && severe[groupQueue]):
		return Shed, reasons
	case over[groupMemory] || over[groupCPU] || over[groupQueue]:
		return Clamp, reasons
	}
	return None, nil
}

// reason renders "name=value>=threshold", with " severe" for a severe one.
func reason(name string, v, threshold float64, severe bool) string {
	b := make([]byte, 0, 48)
	b = append(b, name...)
	b = append(b, '=')
	b = strconv.AppendFloat(b, v, 'g', 4, 64)
	b = append(b, ">="...)
	b = strconv.AppendFloat(b, threshold, 'g', 4, 64)
	if severe {
		b = append(b, " severe"...)
	}
	return string(b)
}

// SignalStat is one signal for metrics.
type SignalStat struct {
	Name      string
	Value     float64
	Available bool
	Threshold float64 // 0: check off
	Severe    float64 // where the signal turns severe (0: check off)
}

// Stats is the policy's state for metrics.
type Stats struct {
	Enabled        bool
	Level          Level // level of the latest Decide
	Signals        []SignalStat
	Readings       Readings // the latest disk-backed sample
	None           uint64   // decisions per level
	Clamp          uint64
	Shed           uint64
	PromptRefusals uint64 // 413s from Decision.Check
}

// Stats returns the latest level, each signal and the decision counters.
func (p *Policy) Stats() Stats {
	var r Readings
	if p.opts.Snapshot != nil {
		r = p.opts.Snapshot.Snapshot()
	}
	var queue Signal
	if q := p.lastQueue.Load(); q >= 0 {
		queue = ok(float64(q))
	}
	st := Stats{
		Enabled: p.opts.Enabled, Level: Level(p.lastLevel.Load()), Readings: r,
		None: p.decisions[None].Load(), Clamp: p.decisions[Clamp].Load(), Shed: p.decisions[Shed].Load(),
		PromptRefusals: p.refused.Load(),
	}
	for _, c := range checks(p.opts.Thresholds, &r, queue) {
		s := SignalStat{Name: c.name, Value: c.sig.Value, Available: c.sig.OK}
		if c.threshold > 0 {
			s.Threshold, s.Severe = c.threshold, severeAt(c.threshold, c.bound, p.opts.SevereFactor)
		}
		st.Signals = append(st.Signals, s)
	}
	return st
}
