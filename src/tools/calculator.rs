//! The built-in `calculator` tool's evaluator: a small, safe recursive-descent parser for
//! arithmetic over `f64`. It owns the grammar, the limits that keep hostile input cheap (length and
//! nesting depth, so no input can overflow the stack) and the formatting of results for models.
//!
//! Grammar, loosest binding first:
//!
//! ```text
//! expr    := term (('+' | '-') term)*
//! term    := unary (('*' | '/' | '%') unary)*
//! unary   := ('+' | '-') unary | power
//! power   := primary (('^' | '**') unary)?      right-associative; `-2^2` = -4, `2^-1` = 0.5
//! primary := number | '(' expr ')'
//! ```
//!
//! `×` and `÷` are accepted for `*` and `/`. Positions in error messages count characters from 1.

/// Longest accepted expression, in characters.
pub const MAX_LENGTH: usize = 1000;
/// Deepest accepted nesting of parentheses, unary signs and exponents.
pub const MAX_DEPTH: usize = 64;

/// Why an expression could not be evaluated. The messages are written for the model that called
/// the tool, so it can correct the expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CalcError {
    #[error("empty expression: give an arithmetic expression such as \"2*(3+4)\"")]
    Empty,
    #[error("unexpected character '{found}' at position {position}")]
    UnexpectedChar { found: char, position: usize },
    #[error("unexpected end of expression: a number or '(' is missing at the end")]
    UnexpectedEnd,
    #[error("unbalanced parentheses: every '(' needs a matching ')'")]
    UnbalancedParentheses,
    #[error("division by zero")]
    DivisionByZero,
    #[error("remainder by zero")]
    RemainderByZero,
    #[error("result is not a finite number (overflow, or undefined like 0^-1 or (-8)^0.5)")]
    NotFinite,
    #[error("expression too long: {length} characters, at most {MAX_LENGTH} are allowed")]
    TooLong { length: usize },
    #[error(
        "expression nested too deeply: at most {MAX_DEPTH} levels of parentheses, unary signs \
         and exponents are allowed"
    )]
    TooDeep,
}

/// Evaluate `expression` and format the result: integral values without a fractional part
/// (`"14"`), others as the shortest decimal that reads back as the same `f64` (`"0.1"`).
pub fn evaluate(expression: &str) -> Result<String, CalcError> {
    let length = expression.chars().count();
    if length > MAX_LENGTH {
        return Err(CalcError::TooLong { length });
    }
    let tokens = tokenize(expression)?;
    if tokens.is_empty() {
        return Err(CalcError::Empty);
    }
    check_parentheses(&tokens)?;
    let mut parser = Parser { tokens: &tokens, next: 0, depth: 0 };
    let value = parser.expr()?;
    if let Some(token) = parser.peek() {
        return Err(token.unexpected());
    }
    Ok(format_number(value))
}

/// `value` as a model reads it best.
fn format_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        // Exact: the value is integral and well inside the i64 range; -0.0 becomes "0".
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Number(f64),
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    Open,
    Close,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    kind: Kind,
    /// First character of the token, for error messages.
    first: char,
    /// 1-based character position of `first`.
    position: usize,
}

impl Token {
    fn unexpected(&self) -> CalcError {
        CalcError::UnexpectedChar { found: self.first, position: self.position }
    }
}

fn tokenize(expression: &str) -> Result<Vec<Token>, CalcError> {
    let chars: Vec<char> = expression.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        let (kind, width) = match c {
            '0'..='9' | '.' => number(&chars, i)?,
            '*' if chars.get(i + 1) == Some(&'*') => (Kind::Caret, 2),
            _ => (operator(c).ok_or(CalcError::UnexpectedChar { found: c, position: i + 1 })?, 1),
        };
        tokens.push(Token { kind, first: c, position: i + 1 });
        i += width;
    }
    Ok(tokens)
}

fn operator(c: char) -> Option<Kind> {
    Some(match c {
        '+' => Kind::Plus,
        '-' => Kind::Minus,
        '*' | '×' => Kind::Star,
        '/' | '÷' => Kind::Slash,
        '%' => Kind::Percent,
        '^' => Kind::Caret,
        '(' => Kind::Open,
        ')' => Kind::Close,
        _ => return None,
    })
}

/// The number starting at `start`: digits with at most one '.', at least one digit, and an
/// optional exponent. Returns it with its width in characters.
fn number(chars: &[char], start: usize) -> Result<(Kind, usize), CalcError> {
    let mut end = start;
    let mut digits = 0;
    let mut dot = false;
    while let Some(&c) = chars.get(end) {
        match c {
            '0'..='9' => digits += 1,
            '.' if !dot => dot = true,
            _ => break,
        }
        end += 1;
    }
    if digits == 0 {
        return Err(CalcError::UnexpectedChar { found: chars[start], position: start + 1 });
    }
    end = exponent_end(chars, end)?;
    let text: String = chars[start..end].iter().collect();
    // The scan above only admits text that `f64::from_str` accepts; an error cannot occur.
    let value = text
        .parse::<f64>()
        .map_err(|_| CalcError::UnexpectedChar { found: chars[start], position: start + 1 })?;
    if !value.is_finite() {
        return Err(CalcError::NotFinite);
    }
    Ok((Kind::Number(value), end - start))
}

/// Where an exponent (`e5`, `E-2`, `e+3`) starting at `at` ends; `at` itself when there is none.
fn exponent_end(chars: &[char], at: usize) -> Result<usize, CalcError> {
    if !matches!(chars.get(at), Some('e' | 'E')) {
        return Ok(at);
    }
    let mut end = at + 1;
    if matches!(chars.get(end), Some('+' | '-')) {
        end += 1;
    }
    let digits_start = end;
    while chars.get(end).is_some_and(char::is_ascii_digit) {
        end += 1;
    }
    if end == digits_start {
        return Err(CalcError::UnexpectedChar { found: chars[at], position: at + 1 });
    }
    Ok(end)
}

/// Parentheses must pair up before parsing starts, so a stray one is reported as such.
fn check_parentheses(tokens: &[Token]) -> Result<(), CalcError> {
    let mut open = 0usize;
    for token in tokens {
        match token.kind {
            Kind::Open => open += 1,
            Kind::Close => open = open.checked_sub(1).ok_or(CalcError::UnbalancedParentheses)?,
            _ => {}
        }
    }
    if open == 0 {
        Ok(())
    } else {
        Err(CalcError::UnbalancedParentheses)
    }
}

struct Parser<'a> {
    tokens: &'a [Token],
    next: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.next).copied()
    }

    fn eat(&mut self, kinds: &[Kind]) -> Option<Kind> {
        let kind = self.peek()?.kind;
        kinds.contains(&kind).then(|| {
            self.next += 1;
            kind
        })
    }

    /// Run `parse` one nesting level deeper, refusing to go past `MAX_DEPTH`.
    fn nested(&mut self, parse: impl FnOnce(&mut Self) -> Result<f64, CalcError>) -> Result<f64, CalcError> {
        if self.depth >= MAX_DEPTH {
            return Err(CalcError::TooDeep);
        }
        self.depth += 1;
        let result = parse(self);
        self.depth -= 1;
        result
    }

    fn expr(&mut self) -> Result<f64, CalcError> {
        let mut value = self.term()?;
        while let Some(op) = self.eat(&[Kind::Plus, Kind::Minus]) {
            let right = self.term()?;
            value = finite(if op == Kind::Plus { value + right } else { value - right })?;
        }
        Ok(value)
    }

    fn term(&mut self) -> Result<f64, CalcError> {
        let mut value = self.unary()?;
        while let Some(op) = self.eat(&[Kind::Star, Kind::Slash, Kind::Percent]) {
            let right = self.unary()?;
            value = match op {
                Kind::Star => finite(value * right)?,
                Kind::Slash if right == 0.0 => return Err(CalcError::DivisionByZero),
                Kind::Slash => finite(value / right)?,
                _ if right == 0.0 => return Err(CalcError::RemainderByZero),
                _ => finite(value % right)?,
            };
        }
        Ok(value)
    }

    fn unary(&mut self) -> Result<f64, CalcError> {
        match self.eat(&[Kind::Plus, Kind::Minus]) {
            Some(Kind::Minus) => self.nested(|p| p.unary()).map(|v| -v),
            Some(_) => self.nested(|p| p.unary()),
            None => self.power(),
        }
    }

    fn power(&mut self) -> Result<f64, CalcError> {
        let base = self.primary()?;
        if self.eat(&[Kind::Caret]).is_none() {
            return Ok(base);
        }
        let exponent = self.nested(|p| p.unary())?;
        finite(base.powf(exponent))
    }

    fn primary(&mut self) -> Result<f64, CalcError> {
        let token = self.peek().ok_or(CalcError::UnexpectedEnd)?;
        self.next += 1;
        match token.kind {
            Kind::Number(value) => Ok(value),
            Kind::Open => {
                let value = self.nested(|p| p.expr())?;
                // Parentheses were checked to balance, so this ')' is present.
                match self.eat(&[Kind::Close]) {
                    Some(_) => Ok(value),
                    None => Err(self.peek().map_or(CalcError::UnbalancedParentheses, |t| t.unexpected())),
                }
            }
            _ => Err(token.unexpected()),
        }
    }
}

fn finite(value: f64) -> Result<f64, CalcError> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(CalcError::NotFinite)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(expression: &str) -> String {
        match evaluate(expression) {
            Ok(result) => result,
            Err(error) => panic!("{expression:?} failed: {error}"),
        }
    }

    fn error(expression: &str) -> CalcError {
        match evaluate(expression) {
            Ok(result) => panic!("{expression:?} evaluated to {result}, expected an error"),
            Err(error) => error,
        }
    }

    #[test]
    fn the_example_from_the_tool_description() {
        assert_eq!(eval("2*(3+4)"), "14");
    }

    #[test]
    fn precedence_of_binary_operators() {
        assert_eq!(eval("2+3*4"), "14");
        assert_eq!(eval("2*3+4"), "10");
        assert_eq!(eval("10-4/2"), "8");
        assert_eq!(eval("7+10%4"), "9");
        assert_eq!(eval("2*3^2"), "18");
        assert_eq!(eval("(2+3)*4"), "20");
        assert_eq!(eval("2^(1+2)"), "8");
    }

    #[test]
    fn left_associativity_of_additive_and_multiplicative_operators() {
        assert_eq!(eval("10-3-2"), "5");
        assert_eq!(eval("100/10/5"), "2");
        assert_eq!(eval("17%10%4"), "3");
        assert_eq!(eval("8/4*2"), "4");
        assert_eq!(eval("1-2+3"), "2");
    }

    #[test]
    fn power_is_right_associative_and_binds_tighter_than_unary_minus() {
        assert_eq!(eval("2^3^2"), "512");
        assert_eq!(eval("-2^2"), "-4");
        assert_eq!(eval("(-2)^2"), "4");
        assert_eq!(eval("2^-1"), "0.5");
        assert_eq!(eval("2^-2^2"), "0.0625");
        assert_eq!(eval("-2^-2"), "-0.25");
        assert_eq!(eval("2**10"), "1024");
        assert_eq!(eval("2**3**2"), "512");
    }

    #[test]
    fn unary_chains() {
        assert_eq!(eval("--3"), "3");
        assert_eq!(eval("---3"), "-3");
        assert_eq!(eval("+-+3"), "-3");
        assert_eq!(eval("+3"), "3");
        assert_eq!(eval("2--3"), "5");
        assert_eq!(eval("2*-3"), "-6");
        assert_eq!(eval("-(2+3)"), "-5");
        assert_eq!(eval("-0"), "0");
    }

    #[test]
    fn number_forms() {
        assert_eq!(eval("3.5"), "3.5");
        assert_eq!(eval(".5"), "0.5");
        assert_eq!(eval("5."), "5");
        assert_eq!(eval("1e3"), "1000");
        assert_eq!(eval("2.5E-2"), "0.025");
        assert_eq!(eval("1e+2"), "100");
        assert_eq!(eval("007"), "7");
        assert_eq!(eval("1e3*2"), "2000");
    }

    #[test]
    fn remainder_follows_the_sign_of_the_dividend() {
        assert_eq!(eval("-7%3"), "-1");
        assert_eq!(eval("7%-3"), "1");
        assert_eq!(eval("5.5%2"), "1.5");
    }

    #[test]
    fn alternative_operator_spellings() {
        assert_eq!(eval("6×7"), "42");
        assert_eq!(eval("84÷2"), "42");
    }

    #[test]
    fn whitespace_anywhere() {
        assert_eq!(eval("  2 *\t( 3\n+ 4 )  "), "14");
        assert_eq!(eval("- - 3"), "3");
        assert_eq!(eval("2 ^ - 1"), "0.5");
    }

    #[test]
    fn formatting_of_results() {
        assert_eq!(eval("1000*1000"), "1000000");
        assert_eq!(eval("0.1"), "0.1");
        assert_eq!(eval("10/3"), "3.3333333333333335");
        assert_eq!(eval("0.1+0.2"), "0.30000000000000004");
        assert_eq!(eval("3.0"), "3");
        assert_eq!(eval("-4.0"), "-4");
        assert_eq!(eval("999999999999999"), "999999999999999");
        // At 1e15 and above Rust's own formatting applies, which is exact for integral values.
        assert_eq!(eval("1e15"), "1000000000000000");
        assert_eq!(eval("2^60"), "1152921504606847000");
        assert_eq!(eval("1e-7"), "0.0000001");
    }

    #[test]
    fn empty_expressions() {
        assert_eq!(error(""), CalcError::Empty);
        assert_eq!(error("   \t\n"), CalcError::Empty);
    }

    #[test]
    fn unexpected_characters_report_the_character_and_its_position() {
        assert_eq!(error("2+x"), CalcError::UnexpectedChar { found: 'x', position: 3 });
        assert_eq!(error("2 3"), CalcError::UnexpectedChar { found: '3', position: 3 });
        assert_eq!(error("2(3)"), CalcError::UnexpectedChar { found: '(', position: 2 });
        assert_eq!(error("()"), CalcError::UnexpectedChar { found: ')', position: 2 });
        assert_eq!(error("*2"), CalcError::UnexpectedChar { found: '*', position: 1 });
        assert_eq!(error("1..2"), CalcError::UnexpectedChar { found: '.', position: 3 });
        assert_eq!(error("."), CalcError::UnexpectedChar { found: '.', position: 1 });
        assert_eq!(error("2e"), CalcError::UnexpectedChar { found: 'e', position: 2 });
        assert_eq!(error("2e+"), CalcError::UnexpectedChar { found: 'e', position: 2 });
        assert_eq!(error("é+1"), CalcError::UnexpectedChar { found: 'é', position: 1 });
        assert_eq!(error("1+é"), CalcError::UnexpectedChar { found: 'é', position: 3 });
        assert_eq!(error("2***3"), CalcError::UnexpectedChar { found: '*', position: 4 });
        assert_eq!(error("2^^3"), CalcError::UnexpectedChar { found: '^', position: 3 });
        assert_eq!(error("1,000"), CalcError::UnexpectedChar { found: ',', position: 2 });
        assert_eq!(error("NaN"), CalcError::UnexpectedChar { found: 'N', position: 1 });
        assert_eq!(error("inf"), CalcError::UnexpectedChar { found: 'i', position: 1 });
    }

    #[test]
    fn unexpected_end() {
        assert_eq!(error("1+"), CalcError::UnexpectedEnd);
        assert_eq!(error("-"), CalcError::UnexpectedEnd);
        assert_eq!(error("2^"), CalcError::UnexpectedEnd);
        assert_eq!(error("2*(3+)"), CalcError::UnexpectedChar { found: ')', position: 6 });
    }

    #[test]
    fn unbalanced_parentheses() {
        assert_eq!(error("(1+2"), CalcError::UnbalancedParentheses);
        assert_eq!(error("1+2)"), CalcError::UnbalancedParentheses);
        assert_eq!(error(")("), CalcError::UnbalancedParentheses);
        assert_eq!(error("((1)"), CalcError::UnbalancedParentheses);
    }

    #[test]
    fn division_and_remainder_by_zero() {
        assert_eq!(error("1/0"), CalcError::DivisionByZero);
        assert_eq!(error("1/(2-2)"), CalcError::DivisionByZero);
        assert_eq!(error("1/-0"), CalcError::DivisionByZero);
        assert_eq!(error("0/0"), CalcError::DivisionByZero);
        assert_eq!(error("5%0"), CalcError::RemainderByZero);
        assert_eq!(error("5%0.0"), CalcError::RemainderByZero);
    }

    #[test]
    fn non_finite_results() {
        assert_eq!(error("0^-1"), CalcError::NotFinite);
        assert_eq!(error("10^400"), CalcError::NotFinite);
        assert_eq!(error("1e308*10"), CalcError::NotFinite);
        assert_eq!(error("(-8)^0.5"), CalcError::NotFinite);
        assert_eq!(error("1e400"), CalcError::NotFinite);
        assert_eq!(error("-1e308-1e308"), CalcError::NotFinite);
        // An overflowing intermediate is reported even when the final value would be finite.
        assert_eq!(error("1/(1e308*10)"), CalcError::NotFinite);
    }

    #[test]
    fn too_long_expressions_are_refused_before_parsing() {
        let long = format!("1{}", "+1".repeat(500));
        assert_eq!(error(&long), CalcError::TooLong { length: 1001 });
        assert_eq!(error(&"(".repeat(100_000)), CalcError::TooLong { length: 100_000 });
        assert_eq!(error(&"-".repeat(100_000)), CalcError::TooLong { length: 100_000 });
        let longest = format!("1{}", "+1".repeat(499) + " ");
        assert_eq!(eval(&longest), "500");
    }

    #[test]
    fn nesting_up_to_the_limit_is_accepted() {
        let parens = format!("{}1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
        assert_eq!(eval(&parens), "1");
        assert_eq!(eval(&format!("{}1", "-".repeat(MAX_DEPTH))), "1");
        assert_eq!(eval(&format!("1{}", "^1".repeat(MAX_DEPTH))), "1");
        // Long flat expressions do not nest at all.
        assert_eq!(eval(&format!("0{}", "+1".repeat(400))), "400");
    }

    #[test]
    fn nesting_past_the_limit_is_refused_without_overflowing_the_stack() {
        let parens = format!("{}1{}", "(".repeat(MAX_DEPTH + 1), ")".repeat(MAX_DEPTH + 1));
        assert_eq!(error(&parens), CalcError::TooDeep);
        assert_eq!(error(&format!("{}1{}", "(".repeat(499), ")".repeat(499))), CalcError::TooDeep);
        assert_eq!(error(&format!("{}1", "-".repeat(MAX_DEPTH + 1))), CalcError::TooDeep);
        assert_eq!(error(&format!("{}1", "-".repeat(999))), CalcError::TooDeep);
        assert_eq!(error(&format!("1{}", "^1".repeat(499))), CalcError::TooDeep);
        assert_eq!(error(&format!("{}1", "-(".repeat(400))), CalcError::UnbalancedParentheses);
        assert_eq!(error(&format!("{}1{}", "-(".repeat(333), ")".repeat(333))), CalcError::TooDeep);
    }

    #[test]
    fn error_messages_tell_the_model_what_went_wrong() {
        assert_eq!(error("2+x").to_string(), "unexpected character 'x' at position 3");
        assert_eq!(error("1/0").to_string(), "division by zero");
        assert_eq!(error("5%0").to_string(), "remainder by zero");
        assert!(error("").to_string().starts_with("empty expression"));
        assert!(error("1+").to_string().starts_with("unexpected end of expression"));
        assert!(error("(1").to_string().starts_with("unbalanced parentheses"));
        assert!(error("0^-1").to_string().starts_with("result is not a finite number"));
        assert_eq!(
            error(&"1".repeat(1001)).to_string(),
            "expression too long: 1001 characters, at most 1000 are allowed"
        );
        assert!(error(&"-".repeat(100)).to_string().starts_with("expression nested too deeply"));
    }
}
