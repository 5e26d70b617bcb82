"""Seeing reverse-mode autodiff: the server. Run: streamlit run app.py [-- --database postgresql://...]

Streamlit's `App` serves the app's pages (`frame.py`: navigation, sidebar, presenter mode, error guard; it runs each
lesson in `pages/`) and, beside them on the same port, the class mode's push route (`classroom/routes.py`): a
student's stage follows the teacher's steps without a page rerun. The class store is an SQLite file in `data/`
unless `--database` (or $CLASSROOM_DATABASE) names another, such as PostgreSQL for replicas on several machines.
"""

from starlette.middleware import Middleware
from streamlit.starlette import App

from classroom.privacy import NoReferrer
from classroom.routes import ClassRoutes
from ui.class_replays import CourseQuestions

_class = ClassRoutes(CourseQuestions())
# no page or route hands its address (a class page's holds its secret) to the next request as a Referer
app = App("frame.py", routes=_class.routes(), lifespan=_class.lifespan, middleware=[Middleware(NoReferrer)])
