//! OpenAI's list prices per million tokens, as data: Codex reports tokens but no cost, so a
//! run's cost is worked out from these (`Agent::token_price`). Longest prefix wins; a model
//! not listed has no known price. Cached input is priced as input: an upper bound.

use runner_contract::traits::agent::TokenPrice;

/// `(model prefix, input, output)` in US dollars per million tokens.
const PRICES: &[(&str, f64, f64)] = &[
    ("gpt-5.1-codex-mini", 0.25, 2.0),
    ("gpt-5.1-codex", 1.25, 10.0),
    ("gpt-5.1", 1.25, 10.0),
    ("gpt-5-codex", 1.25, 10.0),
    ("gpt-5-mini", 0.25, 2.0),
    ("gpt-5-nano", 0.05, 0.40),
    ("gpt-5", 1.25, 10.0),
    ("gpt-4.1-mini", 0.40, 1.60),
    ("gpt-4.1-nano", 0.10, 0.40),
    ("gpt-4.1", 2.0, 8.0),
    ("o4-mini", 1.10, 4.40),
    ("o3", 2.0, 8.0),
];

/// The list price of `model`, if listed. `None` (Codex's own default, which its config
/// may change and this crate cannot see) has no known price: name the model to price it.
pub(crate) fn price(model: Option<&str>) -> Option<TokenPrice> {
    let model = model?;
    PRICES
        .iter()
        .filter(|(prefix, _, _)| model.starts_with(prefix))
        .max_by_key(|(prefix, _, _)| prefix.len())
        .map(|&(_, input, output)| TokenPrice {
            input_per_million: input,
            output_per_million: output,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_listed_prefix_prices_a_model() {
        assert_eq!(
            price(Some("gpt-5-mini-2025")).unwrap().output_per_million,
            2.0
        );
        assert_eq!(price(Some("gpt-5")).unwrap().input_per_million, 1.25);
        assert!(price(None).is_none(), "Codex's default is not known here");
        assert!(price(Some("scripted-model")).is_none());
        let cost = price(Some("gpt-5"))
            .unwrap()
            .cost(runner_contract::TokenCounts {
                input: 1_000_000,
                output: 100_000,
            });
        assert!((cost - 2.25).abs() < 1e-9, "{cost}");
    }
}
