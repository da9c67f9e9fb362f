/* main.c — fxplain's entry point. */
#include <stdio.h>

int main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  puts("fxplain");
  return 0;
}
