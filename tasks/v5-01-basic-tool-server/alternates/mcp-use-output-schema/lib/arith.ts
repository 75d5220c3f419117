// Alternate legitimate solution: the arithmetic, apart from the server wiring.
export function add(a: number, b: number): number {
  return a + b;
}
