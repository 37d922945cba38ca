// Page-range syntax ("1,3-5,10-", "-3"), resolution against a page count (sorted, unique,
// 1-based) and the error messages for malformed or out-of-range selections.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "io/page_range.h"

namespace locr::io {
namespace {

std::vector<int> pages(const char* spec, int count) { return PageRange::parse(spec).resolve(count); }

std::string parse_error(const char* spec) {
  try {
    PageRange::parse(spec);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "\"" << spec << "\" parsed";
  return {};
}

std::string resolve_error(const char* spec, int count) {
  try {
    PageRange::parse(spec).resolve(count);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "\"" << spec << "\" resolved";
  return {};
}

TEST(PageRange, Singles) {
  EXPECT_EQ(pages("1", 9), (std::vector<int>{1}));
  EXPECT_EQ(pages("9", 9), (std::vector<int>{9}));
  EXPECT_EQ(pages("1,3", 9), (std::vector<int>{1, 3}));
}

TEST(PageRange, Ranges) {
  EXPECT_EQ(pages("1,3-5,10-", 12), (std::vector<int>{1, 3, 4, 5, 10, 11, 12}));
  EXPECT_EQ(pages("-3", 9), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(pages("7-", 9), (std::vector<int>{7, 8, 9}));
  EXPECT_EQ(pages("1-", 3), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(pages("4-4", 9), (std::vector<int>{4}));
  EXPECT_EQ(pages("9-", 9), (std::vector<int>{9}));
}

TEST(PageRange, SortedUniqueAndSpaces) {
  EXPECT_EQ(pages("5, 1-3 ,2", 9), (std::vector<int>{1, 2, 3, 5}));
  EXPECT_EQ(pages(" 3 - 5 , 4 ", 9), (std::vector<int>{3, 4, 5}));
  EXPECT_EQ(pages("\t2,2,2", 9), (std::vector<int>{2}));
  EXPECT_EQ(pages("- 2", 9), (std::vector<int>{1, 2}));
}

TEST(PageRange, All) {
  EXPECT_EQ(PageRange::all().resolve(4), (std::vector<int>{1, 2, 3, 4}));
  EXPECT_EQ(PageRange::all().to_string(), "1-");
  EXPECT_EQ(PageRange::parse(" 1, 3 -5,10- ,-2").to_string(), "1,3-5,10-,1-2");
}

TEST(PageRange, OutOfRange) {
  EXPECT_EQ(resolve_error("12", 9), "page 12 is out of range: the document has 9 pages");
  EXPECT_EQ(resolve_error("3-12", 9), "page 12 is out of range: the document has 9 pages");
  EXPECT_EQ(resolve_error("10-", 9), "page 10 is out of range: the document has 9 pages");
  EXPECT_EQ(resolve_error("-3", 2), "page 3 is out of range: the document has 2 pages");
  EXPECT_EQ(resolve_error("2", 1), "page 2 is out of range: the document has 1 page");
}

TEST(PageRange, Malformed) {
  for (const char* spec : {"", "  ", "0", "0-3", "2-0", "5-3", "-", "a", "1-a", "1,,2", ",1", "1,", "1-2-3", "+3",
                           "1.5", "3 4", "1;2", "9999999999", "-0"}) {
    const std::string msg = parse_error(spec);
    EXPECT_NE(msg.find("invalid page range"), std::string::npos) << spec << ": " << msg;
  }
  EXPECT_NE(parse_error("5-3").find("reversed"), std::string::npos);
  EXPECT_NE(parse_error("0").find("numbered from 1"), std::string::npos);
  EXPECT_NE(parse_error("x").find("\"x\""), std::string::npos);
}

}  // namespace
}  // namespace locr::io
