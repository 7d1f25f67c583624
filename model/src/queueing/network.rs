//! A closed queueing network (`docs/model.md` section 15): centres shared by every class
//! (queues and delays), classes of customers with their populations, think times and service
//! demands, and identical classes counted once with their number of copies.

use thiserror::Error;

/// What a centre is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CentreKind {
    /// A load-independent queue: one server, customers wait their turn.
    Queue,
    /// A delay: every customer is served at once (no waiting), as a think time is.
    Delay,
}

/// A queue that each copy of a class has for itself: a worker computing its own tasks one at
/// a time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OwnQueue {
    /// Service demand of a customer there per cycle, seconds.
    pub demand_s: f64,
    /// The squared coefficient of variation of that service (1: exponential).
    pub scv: f64,
}

/// A class of customers, or `copies` identical classes: each copy has `population`
/// customers of its own, the same demands at the shared centres, and a queue of its own
/// ([`OwnQueue`]) when given. A class with `copies = 1` is an ordinary class of the network.
#[derive(Debug, Clone, PartialEq)]
pub struct CustomerClass {
    /// Identical classes of this kind (at least 1).
    pub copies: u32,
    /// `N_c`: the customers of each copy.
    pub population: u32,
    /// `Z_c`: the think time of a customer per cycle, seconds.
    pub think_s: f64,
    /// `D_{c,k}`: the service demand of a customer per cycle at each shared centre, seconds.
    /// A customer visits each centre once per cycle, so it is also the mean service of a
    /// visit (what the residual-time correction (118) reads).
    pub demands_s: Vec<f64>,
    /// The squared coefficient of variation of the service at each shared centre (1:
    /// exponential, the product form); read at queues only.
    pub scv: Vec<f64>,
    /// A queue each copy has for itself.
    pub own_queue: Option<OwnQueue>,
}

impl CustomerClass {
    /// A class of `population` customers, exponential service everywhere, no queue of its
    /// own, one copy.
    pub fn new(population: u32, think_s: f64, demands_s: Vec<f64>) -> Self {
        let scv = vec![1.0; demands_s.len()];
        CustomerClass {
            copies: 1,
            population,
            think_s,
            demands_s,
            scv,
            own_queue: None,
        }
    }
}

/// A closed network: its shared centres and its classes.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosedNetwork {
    /// The centres every class may visit.
    pub centres: Vec<CentreKind>,
    /// The classes.
    pub classes: Vec<CustomerClass>,
}

/// What is wrong with a network.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum NetworkError {
    /// A class's demands or variations do not match the centres.
    #[error("class {class}: {what} has {got} values for {centres} centres")]
    Shape {
        /// The class, by index.
        class: usize,
        /// `demands` or `scv`.
        what: &'static str,
        /// Values given.
        got: usize,
        /// Centres of the network.
        centres: usize,
    },
    /// A demand, think time or variation is negative or not finite, or a class has no copy.
    #[error("class {class}: {what} = {value} must be finite and {rule}")]
    Value {
        /// The class, by index.
        class: usize,
        /// Which value.
        what: String,
        /// The value.
        value: f64,
        /// What it must be.
        rule: &'static str,
    },
    /// A class with customers has nothing to do: no demand and no think time (its
    /// throughput would be infinite).
    #[error("class {0}: its customers have no demand and no think time")]
    NothingToDo(usize),
}

impl ClosedNetwork {
    /// Checks the shapes and values the solvers rely on.
    pub fn check(&self) -> Result<(), NetworkError> {
        let centres = self.centres.len();
        for (c, class) in self.classes.iter().enumerate() {
            for (what, got) in [("demands", class.demands_s.len()), ("scv", class.scv.len())] {
                if got != centres {
                    return Err(NetworkError::Shape {
                        class: c,
                        what,
                        got,
                        centres,
                    });
                }
            }
            let value = |what: String, value: f64, rule| NetworkError::Value {
                class: c,
                what,
                value,
                rule,
            };
            if class.copies == 0 {
                return Err(value("copies".into(), 0.0, "at least 1"));
            }
            let own = class.own_queue.iter().flat_map(|q| {
                [
                    ("own queue's demand".to_string(), q.demand_s),
                    ("own queue's scv".to_string(), q.scv),
                ]
            });
            let values = [("think time".to_string(), class.think_s)]
                .into_iter()
                .chain(
                    class
                        .demands_s
                        .iter()
                        .enumerate()
                        .map(|(k, &d)| (format!("demand at centre {k}"), d)),
                )
                .chain(
                    class
                        .scv
                        .iter()
                        .enumerate()
                        .map(|(k, &v)| (format!("scv at centre {k}"), v)),
                )
                .chain(own);
            for (what, v) in values {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(value(what, v, "0 or more"));
                }
            }
            if class.population > 0 && self.cycle_demand(c) <= 0.0 {
                return Err(NetworkError::NothingToDo(c));
            }
        }
        Ok(())
    }

    /// A customer of class `c` alone in the network: its think time and every demand, the
    /// time of one cycle without waiting.
    pub fn cycle_demand(&self, c: usize) -> f64 {
        let class = &self.classes[c];
        class.think_s
            + class.demands_s.iter().sum::<f64>()
            + class.own_queue.map_or(0.0, |q| q.demand_s)
    }
}

/// How a network was solved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Exact MVA over every population vector (113)-(116).
    Exact {
        /// The population states it went through.
        states: u64,
    },
    /// Schweitzer-Bard's approximation (117).
    Approximate {
        /// Fixed-point iterations made.
        iterations: u32,
        /// Whether they met the tolerance before the cap.
        converged: bool,
    },
}

/// Mean values of a network at its full population.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// `X_c`: the throughput of one copy of each class, cycles per second.
    pub throughput: Vec<f64>,
    /// `R_{c,k}`: the response time of a customer of each class at each shared centre, per
    /// cycle, seconds.
    pub response_s: Vec<Vec<f64>>,
    /// Its response time at its own queue (0 without one).
    pub own_response_s: Vec<f64>,
    /// `Q_k`: the mean number of customers at each shared centre.
    pub queue: Vec<f64>,
    /// How it was solved.
    pub method: Method,
}

impl Solution {
    /// The network's throughput: every copy of every class, cycles per second.
    pub fn total_throughput(&self, network: &ClosedNetwork) -> f64 {
        network
            .classes
            .iter()
            .zip(&self.throughput)
            .map(|(class, x)| f64::from(class.copies) * x)
            .sum()
    }

    /// The time of one cycle of a customer of class `c`, think time included: `N_c / X_c`.
    pub fn cycle_time_s(&self, network: &ClosedNetwork, c: usize) -> f64 {
        let class = &network.classes[c];
        class.think_s + self.response_s[c].iter().sum::<f64>() + self.own_response_s[c]
    }
}
