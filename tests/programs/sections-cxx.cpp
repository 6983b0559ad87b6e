// SPDX-License-Identifier: MIT
// narwhal.h from C++ (tests/integration/sections.sh): NARWHAL_FUNC in a
// member function and a template, NARWHAL_SECTION, narwhal_begin/end, and a
// section left by an exception, which the scope object still closes.
//
// Expected counts (__func__ names the sections): area 6, scale 6 (4 of
// scale<int>, 2 of scale<double>), loop 3, manual 2, throws 5 (each left by
// an exception).
#include <narwhal.h>

#include <cstdio>
#include <stdexcept>

static volatile int sink;

struct Shape {
	int w, h;
	int area() const
	{
		NARWHAL_FUNC();
		return w * h;
	}
};

template <typename T> static T scale(T v)
{
	NARWHAL_FUNC();
	return v * 2;
}

static void thrower(int i)
{
	NARWHAL_SECTION("throws") {
		if (i >= 0)
			throw std::runtime_error("out");
	}
}

int main()
{
	Shape s{ 2, 3 };

	for (int i = 0; i < 6; i++)
		sink += s.area();
	for (int i = 0; i < 4; i++)
		sink += scale<int>(i);
	for (int i = 0; i < 2; i++)
		sink += (int)scale<double>(i);
	for (int i = 0; i < 3; i++) {
		NARWHAL_SECTION("loop") {
			sink += i;
		}
	}
	for (int i = 0; i < 2; i++) {
		narwhal_begin("manual");
		sink += i;
		narwhal_end();
	}
	for (int i = 0; i < 5; i++) {
		try {
			thrower(i);
		} catch (const std::exception &) {
			sink++;
		}
	}
	struct narwhal_stats st;
	if (narwhal_stats("throws", &st) == 0)
		std::printf("throws: %llu closed, %llu open\n", st.count - st.open, st.open);
	return 0;
}
