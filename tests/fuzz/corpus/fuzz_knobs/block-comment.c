/* @kevo knob BLOCK 64 {32, 64, 128} */
# @kevo knob UNROLL 1 {1, 2, 4}
 * @kevo require BLOCK * UNROLL <= 256 && NCPU >= 1
int kevo_kernel(void) { return BLOCK; }
