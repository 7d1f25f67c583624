//! [`App`]: an application's entry point with everything it may plug in.
//!
//! ```no_run
//! # use hmw::{Problem, Task, TaskResult, WorkerContext};
//! # use hmw::{Demand, Scheduler};
//! # #[derive(serde::Serialize, serde::Deserialize)] struct Sq(u64);
//! # #[derive(serde::Serialize, serde::Deserialize)] struct Sum(u64);
//! # impl Task for Sq { type Output = Sum; fn execute(self, _: &WorkerContext) -> Sum { Sum(self.0 * self.0) } }
//! # impl TaskResult for Sum { fn join(&mut self, o: Self) -> Result<(), Self> { self.0 += o.0; Ok(()) } }
//! # struct Squares { next: u64, sum: u64 }
//! # impl Problem for Squares {
//! #     type Task = Sq;
//! #     fn next_task(&mut self) -> Option<Sq> { (self.next < 100).then(|| { self.next += 1; Sq(self.next) }) }
//! #     fn gather(&mut self, _: u64, r: Sum) { self.sum += r.0 }
//! # }
//! /// Four tasks a batch; whom to serve stays the default (fewest tasks held first).
//! struct Fours;
//! impl Scheduler for Fours {
//!     fn batch_size(&mut self, _: &Demand) -> usize { 4 }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     hmw::App::new(|_settings: &toml::Table| Ok(Squares { next: 0, sum: 0 }))
//!         .scheduler(|_run| Box::new(Fours))
//!         .run(|squares, _stats| { println!("{}", squares.sum); Ok(()) })
//! }
//! ```

use std::{process::ExitCode, sync::Arc};

use serde::de::DeserializeOwned;

use crate::runner::{run_app, MakeScheduler, SplitterOf};
use hmw_core::{
    app::{Problem, Splitter},
    config::RunConfig,
    scheduler::Scheduler,
    stats::RunStats,
};

/// How an [`App`] makes its splitter from its settings.
type MakeSplitterBox<P, S> = Box<dyn Fn(&S) -> anyhow::Result<SplitterOf<P>>>;

/// An application being put together: its problem's factory, and optionally a splitter and
/// a scheduler; [`run`](Self::run) plays this rank's role. [`crate::run`] and
/// [`crate::run_split`] are shorthands.
pub struct App<P: Problem, S, F> {
    make_problem: F,
    make_splitter: Option<MakeSplitterBox<P, S>>,
    make_scheduler: Option<MakeScheduler>,
}

impl<P, S, F> App<P, S, F>
where
    P: Problem,
    S: DeserializeOwned,
    F: FnOnce(&S) -> anyhow::Result<P>,
{
    /// An application whose problem `make_problem` makes from the `[application]` settings.
    pub fn new(make_problem: F) -> Self {
        App {
            make_problem,
            make_splitter: None,
            make_scheduler: None,
        }
    }

    /// Re-split tasks on sub-masters (and shape them on CMs) with the splitters
    /// `make_splitter` makes (see [`Splitter`]).
    pub fn splitter<Sp: Splitter<P::Task>>(
        mut self,
        make_splitter: impl Fn(&S) -> anyhow::Result<Sp> + 'static,
    ) -> Self {
        self.make_splitter = Some(Box::new(move |settings: &S| {
            Ok(Box::new(make_splitter(settings)?) as SplitterOf<P>)
        }));
        self
    }

    /// Schedule with the application's own [`Scheduler`]: `make_scheduler` makes one for the
    /// master and one for each sub-master, from the run's configuration (instead of the
    /// policy `[run] scheduler` names).
    pub fn scheduler(
        mut self,
        make_scheduler: impl Fn(&RunConfig) -> Box<dyn Scheduler> + Send + Sync + 'static,
    ) -> Self {
        self.make_scheduler = Some(Arc::new(make_scheduler));
        self
    }

    /// Parse the command line, check the configuration on every rank and play this rank's
    /// role; on the master, `finish` receives the problem with every result gathered, and
    /// the statistics.
    pub fn run(self, finish: impl FnOnce(P, &RunStats) -> anyhow::Result<()>) -> ExitCode {
        run_app(
            self.make_problem,
            self.make_splitter.as_deref(),
            self.make_scheduler,
            finish,
        )
    }
}
