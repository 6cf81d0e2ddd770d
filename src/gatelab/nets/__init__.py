"""Networks: the DGN layer stack (FC, VCONV, GCONV) and its stacking, the routing net, and the
regimes that build a DGN (what is frozen, copied, independent)."""
