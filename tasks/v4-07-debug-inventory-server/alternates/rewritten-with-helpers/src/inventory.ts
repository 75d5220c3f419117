// Alternate legitimate solution: the stock kept by a small class, errors as return values instead of exceptions.
export interface Item {
  sku: string;
  name: string;
  stock: number;
}

export type Outcome<T> = { ok: true; value: T } | { ok: false; message: string };

export class Inventory {
  readonly #items: Item[] = [
    { sku: "coffee-mug", name: "Coffee Mug", stock: 8 },
    { sku: "desk-lamp", name: "Desk Lamp", stock: 2 },
    { sku: "notebook", name: "Notebook", stock: 15 },
  ];

  list(): Item[] {
    return this.#items.map((item) => ({ ...item }));
  }

  stockOf(sku: string): Outcome<number> {
    const item = this.#find(sku);
    return item ? { ok: true, value: item.stock } : this.#missing(sku);
  }

  reserve(sku: string, quantity: number): Outcome<number> {
    const item = this.#find(sku);
    if (!item) return this.#missing(sku);
    if (quantity > item.stock) {
      return { ok: false, message: `insufficient stock: ${item.stock} ${sku} left, ${quantity} asked for` };
    }
    item.stock -= quantity;
    return { ok: true, value: item.stock };
  }

  restock(sku: string, quantity: number): Outcome<number> {
    const item = this.#find(sku);
    if (!item) return this.#missing(sku);
    item.stock += quantity;
    return { ok: true, value: item.stock };
  }

  #find(sku: string): Item | undefined {
    return this.#items.find((item) => item.sku === sku);
  }

  #missing(sku: string): Outcome<never> {
    return { ok: false, message: `item ${sku} not found` };
  }
}
