def add_ints(a: object, b: object) -> int:
    if type(a) is not int or type(b) is not int:
        raise TypeError("a and b must be integers")
    return a + b
