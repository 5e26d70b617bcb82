"""The course's content: the programs the lessons run, the seed's scenarios and the experiments the
pages drive. Plain Python over the engine, importable without Streamlit (a course's own tests can use it).

`python -m course.scenarios [--backend mlx]` prints every seed scenario in the seed's form.
"""
