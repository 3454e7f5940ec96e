// Placeholder translation unit until the first parallel/ source lands.
