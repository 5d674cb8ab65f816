package policy

// Decoding of tier tables: their tiers, assignments, and the inheritance of tiers (extends).

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// parseTables decodes tier_tables.
func (d *decoder) parseTables(n *yaml.Node) {
	w := d.w
	w.mapping(n, "tier_tables", func(name string, kn, vn *yaml.Node) {
		path := keyPath("tier_tables", name)
		t := &TierTable{Name: name, Tiers: map[string]*Tier{}, Assign: map[string]string{}, src: &source{path: path, pos: w.pos(kn)}}
		specs := map[string]*tierSpec{}
		var order []string
		w.fields(vn, path, tableFields, func(key string, fn *yaml.Node, fpath string) {
			t.src.set(key, fpath, w.pos(fn))
			switch key {
			case "description":
				w.str(fn, fpath)
			case "default":
				var ok bool
				if t.Default, ok = w.nonEmpty(fn, fpath); !ok {
					t.src.markBroken("default")
				}
			case "tiers":
				w.mapping(fn, fpath, func(tier string, tkn, tvn *yaml.Node) {
					tp := keyPath(fpath, tier)
					t.src.set("tier:"+tier, tp, w.pos(tkn))
					s := &tierSpec{name: tier, path: tp, pos: w.pos(tkn)}
					mark := len(w.errs.errs)
					defer func() {
						if len(w.errs.errs) > mark {
							t.src.markBroken("tier:" + tier)
						}
					}()
					w.fields(tvn, tp, tierFields, func(key string, fn *yaml.Node, fp string) {
						t.src.set("tier:"+tier+"."+key, fp, w.pos(fn))
						switch key {
						case "description":
							w.str(fn, fp)
						case "extends":
							s.extendsN = fn
							s.extends, _ = w.nonEmpty(fn, fp)
						default:
							d.limitsField(&s.spec, key, fn, fp)
							setRateItems(t.src, "tier:"+tier+".rate", &s.spec)
						}
					})
					specs[tier] = s
					order = append(order, tier)
				})
			case "assign":
				w.mapping(fn, fpath, func(val string, akn, avn *yaml.Node) {
					ap := keyPath(fpath, val)
					t.src.set("assign:"+val, ap, w.pos(avn))
					if tier, ok := w.nonEmpty(avn, ap); ok {
						t.Assign[val] = tier
					}
				})
			}
		})
		for _, name := range order {
			if tier := d.resolveTier(t, specs, name, nil); tier != nil {
				t.Tiers[name] = tier
			}
		}
		d.tables[name] = t
	})
}

// tierSpec is a tier as written, before inheritance.
type tierSpec struct {
	name, path string
	pos        Pos
	extends    string
	extendsN   *yaml.Node
	spec       limitsSpec
	done       bool
	visiting   bool
	tier       *Tier
	merged     limitsSpec
}

// resolveTier resolves a tier's extends chain (reporting unknown parents
// and cycles) and builds its limits.
func (d *decoder) resolveTier(t *TierTable, specs map[string]*tierSpec, name string, chain []string) *Tier {
	s := specs[name]
	if s.done {
		return s.tier
	}
	if s.visiting {
		return nil
	}
	s.visiting = true
	mark := len(d.w.errs.errs)
	defer func() {
		if len(d.w.errs.errs) > mark {
			t.src.markBroken("tier:" + name)
		}
	}()
	merged := s.spec
	if s.extends != "" {
		parent := specs[s.extends]
		switch {
		case parent == nil:
			d.w.fail(s.extendsN, keyPath(s.path, "extends"), "tier %q is not defined in this table", truncate(s.extends))
		case parent.visiting:
			cycle := append(append([]string{}, chain...), name, s.extends)
			d.w.fail(s.extendsN, keyPath(s.path, "extends"), "cyclic extends: %s", strings.Join(cycle, " -> "))
		default:
			if d.resolveTier(t, specs, s.extends, append(chain, name)) != nil {
				merged = inherit(parent.merged, s.spec)
			}
		}
	}
	s.visiting, s.done = false, true
	s.merged = merged
	s.tier = &Tier{Name: name, Limits: d.build(&merged, d.defaults.algorithm)}
	return s.tier
}

// inherit returns child's spec with the fields it does not give taken from
// parent. A child's burst applies to the parent's rate; a child's rate
// comes with its own burst (or none).
func inherit(parent, child limitsSpec) limitsSpec {
	m := child
	if m.rate == nil {
		m.rate, m.rateN, m.ratePath = parent.rate, parent.rateN, parent.ratePath
		m.more, m.items = parent.more, parent.items
		if m.burst == nil {
			m.burst, m.burstN, m.burstPath = parent.burst, parent.burstN, parent.burstPath
		}
	}
	if m.algorithm == nil {
		m.algorithm, m.algoN, m.algoPath = parent.algorithm, parent.algoN, parent.algoPath
	}
	if m.quota == nil {
		m.quota = parent.quota
	}
	if m.concurrency == nil {
		m.concurrency = parent.concurrency
	}
	if m.unlimited == nil {
		m.unlimited = parent.unlimited
	}
	return m
}
