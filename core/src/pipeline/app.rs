//! What a pipeline application writes: a [`Source`] of items, typed [`Stage`]s (a stateless
//! function per item, its input and output types, the operations it costs) and a [`Sink`],
//! chained by [`Pipeline`] so that each stage's input is the previous stage's output. The
//! runtime sees the chain as [`Chain`]: functions from bytes to bytes.

use std::{marker::PhantomData, sync::Arc};

use serde::{de::DeserializeOwned, Serialize};

use crate::protocol::{decode, encode, DecodeError};

/// Where the items come from: on the controller only, in order (the sink receives them in
/// the same order).
pub trait Source: Send + 'static {
    /// An item.
    type Item: Serialize + DeserializeOwned + Send + 'static;
    /// The next item, or `None` when there are no more.
    fn next_item(&mut self) -> Option<Self::Item>;
}

/// One stage: a function of one item, without state between items (any node may run it, any
/// number of nodes may run it side by side).
pub trait Stage: Send + Sync + 'static {
    /// What it takes.
    type In: Serialize + DeserializeOwned + 'static;
    /// What it gives.
    type Out: Serialize + DeserializeOwned + 'static;
    /// The stage's work on one item.
    fn process(&self, input: Self::In) -> Self::Out;
    /// Basic operations one item costs it (the plan's `oper` of the stage; for the
    /// statistics' operations per second).
    fn operations(&self) -> f64 {
        1.0
    }
}

/// Where the items end, on the controller, in the source's order.
pub trait Sink<T>: Send + 'static {
    /// Item `seq` (0 for the source's first) after every stage.
    fn receive(&mut self, seq: u64, item: T);
}

/// A stage made of a function: `hmw::stage_fn(|x: In| -> Out)`.
pub struct FnStage<F, I, O> {
    function: F,
    operations: f64,
    types: PhantomData<fn(I) -> O>,
}

/// A stage from a function of one item costing `operations` basic operations.
pub fn stage_fn<F, I, O>(operations: f64, function: F) -> FnStage<F, I, O>
where
    F: Fn(I) -> O + Send + Sync + 'static,
{
    FnStage {
        function,
        operations,
        types: PhantomData,
    }
}

impl<F, I, O> Stage for FnStage<F, I, O>
where
    F: Fn(I) -> O + Send + Sync + 'static,
    I: Serialize + DeserializeOwned + 'static,
    O: Serialize + DeserializeOwned + 'static,
{
    type In = I;
    type Out = O;

    fn process(&self, input: I) -> O {
        (self.function)(input)
    }

    fn operations(&self) -> f64 {
        self.operations
    }
}

/// A stage as the runtime runs it: decode its input, process, encode its output.
type RunBytes = Box<dyn Fn(&[u8]) -> Result<Vec<u8>, DecodeError> + Send + Sync>;

/// One stage of the chain, its types erased.
pub struct ErasedStage {
    /// Its name.
    pub name: String,
    /// Basic operations per item.
    pub operations: f64,
    run: RunBytes,
}

impl ErasedStage {
    /// The stage's output for the encoded `input`.
    pub fn run(&self, input: &[u8]) -> Result<Vec<u8>, DecodeError> {
        (self.run)(input)
    }
}

/// The stages in order, shared by every thread of a rank.
#[derive(Clone)]
pub struct Chain {
    stages: Arc<Vec<ErasedStage>>,
}

impl Chain {
    /// The stages.
    pub fn stages(&self) -> &[ErasedStage] {
        &self.stages
    }

    /// Their names.
    pub fn names(&self) -> Vec<String> {
        self.stages.iter().map(|s| s.name.clone()).collect()
    }

    /// How many.
    pub fn len(&self) -> usize {
        self.stages.len()
    }

    /// Whether it has none.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }
}

/// A pipeline being put together: a source, then stages whose input is the previous output
/// (`T`, the source's item at first), then a sink.
pub struct Pipeline<So: Source, T> {
    source: So,
    stages: Vec<ErasedStage>,
    output: PhantomData<fn() -> T>,
}

impl<So: Source> Pipeline<So, So::Item> {
    /// A pipeline of the items of `source`.
    pub fn source(source: So) -> Self {
        Pipeline {
            source,
            stages: Vec::new(),
            output: PhantomData,
        }
    }
}

impl<So: Source, T: Serialize + DeserializeOwned + 'static> Pipeline<So, T> {
    /// `stage`, named `name`, takes the items from here on.
    pub fn stage<S: Stage<In = T>>(mut self, name: &str, stage: S) -> Pipeline<So, S::Out> {
        let operations = stage.operations();
        let run: RunBytes = Box::new(move |input: &[u8]| {
            let value: S::In = decode(input, "a stage's input")?;
            Ok(encode(&stage.process(value)))
        });
        self.stages.push(ErasedStage {
            name: name.to_owned(),
            operations,
            run,
        });
        Pipeline {
            source: self.source,
            stages: self.stages,
            output: PhantomData,
        }
    }

    /// The items end in `sink`.
    pub fn sink<Si: Sink<T>>(self, sink: Si) -> Complete<So, Si, T> {
        Complete {
            source: self.source,
            chain: Chain {
                stages: Arc::new(self.stages),
            },
            sink,
            output: PhantomData,
        }
    }
}

/// A whole pipeline: source, stages, sink.
pub struct Complete<So, Si, T> {
    /// The source.
    pub source: So,
    /// The stages.
    pub chain: Chain,
    /// The sink.
    pub sink: Si,
    /// The type the sink takes.
    pub output: PhantomData<fn() -> T>,
}

/// Hand the encoded item `seq` (the last stage's output) to `sink`.
pub fn deliver<T: DeserializeOwned, Si: Sink<T>>(
    sink: &mut Si,
    seq: u64,
    body: &[u8],
) -> Result<(), DecodeError> {
    let item: T = decode(body, "the last stage's output")?;
    sink.receive(seq, item);
    Ok(())
}

impl<So: Source, Si: Sink<T>, T: DeserializeOwned> Complete<So, Si, T> {
    /// The source's next item, encoded.
    pub fn next_encoded(&mut self) -> Option<Vec<u8>> {
        self.source.next_item().map(|item| encode(&item))
    }

    /// Every stage in order on one item, in this thread: what a single-process run of the
    /// pipeline gives, to check a distributed run against.
    pub fn run_locally(mut self) -> Result<Si, DecodeError> {
        let mut seq = 0;
        while let Some(mut bytes) = self.next_encoded() {
            for stage in self.chain.stages() {
                bytes = stage.run(&bytes)?;
            }
            deliver(&mut self.sink, seq, &bytes)?;
            seq += 1;
        }
        Ok(self.sink)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Count(u64, u64);
    impl Source for Count {
        type Item = u64;
        fn next_item(&mut self) -> Option<u64> {
            (self.0 < self.1).then(|| {
                self.0 += 1;
                self.0
            })
        }
    }

    #[derive(Default)]
    struct Collect(Vec<(u64, String)>);
    impl Sink<String> for Collect {
        fn receive(&mut self, seq: u64, item: String) {
            self.0.push((seq, item));
        }
    }

    struct Square;
    impl Stage for Square {
        type In = u64;
        type Out = u64;
        fn process(&self, x: u64) -> u64 {
            x * x
        }
        fn operations(&self) -> f64 {
            2.0
        }
    }

    #[test]
    fn stages_chain_their_types() {
        let pipeline = Pipeline::source(Count(0, 3))
            .stage("square", Square)
            .stage("text", stage_fn(1.0, |x: u64| format!("<{x}>")))
            .sink(Collect::default());
        assert_eq!(pipeline.chain.names(), vec!["square", "text"]);
        assert_eq!(pipeline.chain.stages()[0].operations, 2.0);
        let sink = pipeline.run_locally().unwrap();
        assert_eq!(
            sink.0,
            vec![(0, "<1>".into()), (1, "<4>".into()), (2, "<9>".into())]
        );
    }

    #[test]
    fn a_stage_given_bytes_of_another_type_says_so() {
        let pipeline = Pipeline::source(Count(0, 1))
            .stage("square", Square)
            .stage("text", stage_fn(1.0, |x: u64| x.to_string()))
            .sink(Collect::default());
        let err = pipeline.chain.stages()[0].run(&[0xff; 3]).unwrap_err();
        assert!(err.to_string().contains("a stage's input"), "{err}");
    }
}
