//! The one terminal-table layout: rows of cells padded to each column's display width
//! ([`super::width`]), left- or right-aligned per column, joined by a gap, each line trimmed at
//! the end. Every text table in osgauge (the result tables, `results list`, `compare`, the
//! interactivity grid, the application model) is drawn by it.

use super::{pad_left, pad_right, width};

/// How a column's cells are aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table layout: a prefix for every line, the gap between columns, and the alignment of each
/// column (columns beyond the list are left-aligned).
#[derive(Debug, Clone, Copy)]
pub struct Grid<'a> {
    pub indent: &'a str,
    pub gap: &'a str,
    pub align: &'a [Align],
}

impl Default for Grid<'_> {
    fn default() -> Self {
        Grid {
            indent: "",
            gap: "  ",
            align: &[],
        }
    }
}

impl Grid<'_> {
    /// Each column's width: the widest of its cells (a missing cell is empty).
    pub fn widths<S: AsRef<str>>(rows: &[Vec<S>]) -> Vec<usize> {
        let n = rows.iter().map(Vec::len).max().unwrap_or(0);
        (0..n)
            .map(|k| {
                rows.iter()
                    .map(|r| r.get(k).map_or(0, |c| width(c.as_ref())))
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The table's lines (no newline), every row padded to the column widths.
    pub fn lines<S: AsRef<str>>(&self, rows: &[Vec<S>]) -> Vec<String> {
        let w = Self::widths(rows);
        rows.iter()
            .map(|r| {
                let cells: Vec<String> = (0..w.len())
                    .map(|k| {
                        let c = r.get(k).map_or("", |c| c.as_ref());
                        match self.align.get(k).copied().unwrap_or(Align::Left) {
                            Align::Left => pad_right(c, w[k]),
                            Align::Right => pad_left(c, w[k]),
                        }
                    })
                    .collect();
                format!("{}{}", self.indent, cells.join(self.gap))
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    /// The table as text, one line per row, each ending in a newline.
    pub fn render<S: AsRef<str>>(&self, rows: &[Vec<S>]) -> String {
        self.lines(rows).into_iter().map(|l| l + "\n").collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_by_display_width_and_lines_are_trimmed() {
        let rows = vec![
            vec!["name", "value", ""],
            vec!["内核", "1", ""],
            vec!["x", "12345", "note"],
        ];
        let g = Grid {
            indent: "  ",
            gap: "  ",
            align: &[Align::Left, Align::Right],
        };
        assert_eq!(
            g.lines(&rows),
            vec!["  name  value", "  内核      1", "  x     12345  note"]
        );
        // A short row is padded as if its missing cells were empty.
        assert_eq!(
            Grid::default().render(&[vec!["a", "b"], vec!["ccc"]]),
            "a    b\nccc\n"
        );
        assert_eq!(Grid::widths(&[vec!["🚀", "ab"]]), vec![2, 2]);
    }
}
