package admission

// heap is a binary min-heap of tickets that knows where each ticket sits, so that a
// ticket leaving from the middle (timeout, cancellation) costs O(log n). A ticket can sit
// in several heaps at once; each heap uses its own slot of Ticket.pos.
type heap struct {
	items []*Ticket
	less  func(a, b *Ticket) bool
	slot  int
}

func (h *heap) len() int { return len(h.items) }

func (h *heap) min() *Ticket {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *heap) push(t *Ticket) {
	t.pos[h.slot] = len(h.items)
	h.items = append(h.items, t)
	h.up(len(h.items) - 1)
}

// remove takes t out of the heap; t must be in it.
func (h *heap) remove(t *Ticket) {
	i := t.pos[h.slot]
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	t.pos[h.slot] = -1
	if i != last {
		if !h.down(i) {
			h.up(i)
		}
	}
}

func (h *heap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.items[i].pos[h.slot] = i
	h.items[j].pos[h.slot] = j
}

func (h *heap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

// down sifts item i down and says whether it moved.
func (h *heap) down(i int) bool {
	start, n := i, len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			m = r
		}
		if !h.less(h.items[m], h.items[i]) {
			break
		}
		h.swap(i, m)
		i = m
	}
	return i > start
}

// reset empties the heap and sets its order.
func (h *heap) reset(less func(a, b *Ticket) bool) {
	clear(h.items)
	h.items = h.items[:0]
	h.less = less
}
