// SPDX-License-Identifier: MIT
// bigcxx: a C++ file for the compiler to chew on, not a program to profile.
// The HTML report's and the SVG flame graph's tests (export-html.sh,
// export-flamegraph.sh) record `g++ -O2 -c` of it: a real compile, whose
// stacks are deep (the parser's recursion, template instantiation, the
// optimizer's passes) and whose time is spread over thousands of
// functions, as a compile of real code is.  Built here too, so that it
// keeps compiling; run, it prints a small inventory.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace inv {

// Compile-time recursion: the instantiations nest as deep as N.
template <unsigned N> struct Fib {
	static constexpr unsigned long value = Fib<N - 1>::value + Fib<N - 2>::value;
};
template <> struct Fib<1> {
	static constexpr unsigned long value = 1;
};
template <> struct Fib<0> {
	static constexpr unsigned long value = 0;
};

template <typename... Ts> struct TypeList {};

template <typename List> struct Length;
template <typename... Ts> struct Length<TypeList<Ts...>> {
	static constexpr std::size_t value = sizeof...(Ts);
};

template <typename T, typename... Rest> struct Largest {
	using type = T;
};
template <typename T, typename U, typename... Rest> struct Largest<T, U, Rest...> {
	using type = typename Largest<typename std::conditional<(sizeof(T) >= sizeof(U)), T, U>::type,
				      Rest...>::type;
};

struct Item {
	std::string name;
	std::string category;
	double price = 0;
	int count = 0;

	double value() const { return price * count; }
	bool operator<(const Item &o) const
	{
		return std::tie(category, name, price) < std::tie(o.category, o.name, o.price);
	}
};

template <typename Key, typename Value> class Index {
      public:
	void add(const Key &k, const Value &v) { map_[k].push_back(v); }
	const std::vector<Value> &get(const Key &k) const
	{
		static const std::vector<Value> none;
		auto it = map_.find(k);
		return it == map_.end() ? none : it->second;
	}
	template <typename F> void each(F f) const
	{
		for (const auto &kv : map_)
			for (const auto &v : kv.second)
				f(kv.first, v);
	}
	std::size_t size() const { return map_.size(); }

      private:
	std::map<Key, std::vector<Value>> map_;
};

class Inventory {
      public:
	void add(Item it)
	{
		by_category_.add(it.category, items_.size());
		by_name_[it.name] = items_.size();
		items_.push_back(std::move(it));
	}

	double total() const
	{
		return std::accumulate(items_.begin(), items_.end(), 0.0,
				       [](double a, const Item &b) { return a + b.value(); });
	}

	std::vector<Item> sorted(std::function<bool(const Item &, const Item &)> by) const
	{
		std::vector<Item> v = items_;
		std::stable_sort(v.begin(), v.end(), by);
		return v;
	}

	std::map<std::string, double> per_category() const
	{
		std::map<std::string, double> out;
		by_category_.each([&](const std::string &c, std::size_t i) { out[c] += items_[i].value(); });
		return out;
	}

	std::set<std::string> categories() const
	{
		std::set<std::string> s;
		for (const auto &i : items_)
			s.insert(i.category);
		return s;
	}

	const Item *find(const std::string &name) const
	{
		auto it = by_name_.find(name);
		return it == by_name_.end() ? nullptr : &items_[it->second];
	}

	std::string report() const
	{
		std::ostringstream os;
		for (const auto &kv : per_category())
			os << kv.first << ": " << kv.second << "\n";
		auto top = sorted([](const Item &a, const Item &b) { return a.value() > b.value(); });
		for (std::size_t i = 0; i < top.size() && i < 3; i++)
			os << "  " << top[i].name << " " << top[i].value() << "\n";
		return os.str();
	}

      private:
	std::vector<Item> items_;
	Index<std::string, std::size_t> by_category_;
	std::unordered_map<std::string, std::size_t> by_name_;
};

template <typename T> class Matrix {
      public:
	Matrix(std::size_t r, std::size_t c) : r_(r), c_(c), v_(r * c) {}
	T &at(std::size_t i, std::size_t j) { return v_[i * c_ + j]; }
	const T &at(std::size_t i, std::size_t j) const { return v_[i * c_ + j]; }
	Matrix operator*(const Matrix &o) const
	{
		Matrix m(r_, o.c_);
		for (std::size_t i = 0; i < r_; i++)
			for (std::size_t j = 0; j < o.c_; j++) {
				T s{};
				for (std::size_t k = 0; k < c_; k++)
					s += at(i, k) * o.at(k, j);
				m.at(i, j) = s;
			}
		return m;
	}
	T trace() const
	{
		T s{};
		for (std::size_t i = 0; i < std::min(r_, c_); i++)
			s += at(i, i);
		return s;
	}

      private:
	std::size_t r_, c_;
	std::vector<T> v_;
};

template <typename T> T power_trace(std::size_t n, int p)
{
	Matrix<T> m(n, n);
	for (std::size_t i = 0; i < n; i++)
		for (std::size_t j = 0; j < n; j++)
			m.at(i, j) = static_cast<T>((i + 1) * (j + 2) % 7);
	Matrix<T> r = m;
	for (int k = 1; k < p; k++)
		r = r * m;
	return r.trace();
}

template <typename... Ts> auto sum_all(Ts... ts) -> decltype((ts + ...))
{
	return (ts + ...);
}

std::unique_ptr<Inventory> sample()
{
	auto inv = std::make_unique<Inventory>();
	const char *cats[] = { "tools", "food", "books", "toys" };
	for (int i = 0; i < 40; i++) {
		Item it;
		it.name = "item" + std::to_string(i);
		it.category = cats[i % 4];
		it.price = 1.5 * (i % 9 + 1);
		it.count = i % 5 + 1;
		inv->add(std::move(it));
	}
	return inv;
}

} // namespace inv

int main()
{
	using namespace inv;
	using Big = Largest<char, short, double, long double, int>::type;
	auto inv = sample();
	std::string text = inv->report();
	std::fputs(text.c_str(), stdout);
	std::printf("total %.2f, %zu categories, fib(40) %lu, %zu types, largest %zu bytes\n",
		    inv->total(), inv->categories().size(), Fib<40>::value,
		    Length<TypeList<int, long, char, Big>>::value, sizeof(Big));
	std::printf("traces %d %.1f %ld, sum %g\n", power_trace<int>(6, 4), power_trace<double>(5, 3),
		    power_trace<long>(4, 5), sum_all(1, 2.5, 3L, 4.0f));
	const Item *it = inv->find("item7");
	return it && it->count > 0 ? 0 : 1;
}
