-- After a failed store step: insertion order preserved again (the connection's default).
RESET preserve_insertion_order;
