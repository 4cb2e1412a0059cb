//! Mock services: the service engine and the built-in catalogue.
