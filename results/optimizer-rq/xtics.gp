set xtics ("mm" 2, "csd" 6, "avn" 10, "ac" 14, "cfft" 18, "cfft6" 22, "lost_update" 26)
